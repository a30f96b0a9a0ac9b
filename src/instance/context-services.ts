import { isAbsolute, join } from 'node:path';
import type { BackendSession } from '../backends/backend.js';
import { backendForFile, parseDevice } from '../backends/backend-for-file.js';
import type { InferOptions, ModelContext, ModelContextData } from '../definition/model-context.js';
import { TextTokenizer } from '../tokenizer/tokenizer.js';
import { callerTraceparent } from './caller-trace.js';
import { instanceLogger, silentLogger, type ModelLogger } from './instance-logger.js';

/** `traceparent`: the span the call is made under (the caller's compute span), when traced. */
export type InferCall = (model: string, input: unknown, options: InferOptions, traceparent?: string) => Promise<unknown>;


/**
 * Gives an instance's context its services: loading model files and tokenizers into this thread,
 * and calling other served models. Keeps the sessions it opened so they can be released after `finalize`.
 */
export class ContextServices {
  private readonly sessions: BackendSession[] = [];
  readonly context: ModelContext;

  /** `root`: the logger ctx.logger is a child of (the server's, or in a worker the one relaying to it). */
  constructor(data: ModelContextData, infer: InferCall, root: ModelLogger = silentLogger()) {
    const fileOf = (path: string): string => (isAbsolute(path) ? path : join(data.modelDir, path));
    this.context = {
      ...data,
      loadModel: async (path, options = {}) => {
        const file = fileOf(path);
        const device = parseDevice(options.device ?? data.deviceKind, data.deviceId);
        const session = await (await backendForFile(file, device)).load(file, { device, options: options.options });
        this.sessions.push(session);
        return session;
      },
      loadTokenizer: (path) => TextTokenizer.fromFile(fileOf(path)),
      infer: <R>(model: string, input: unknown, options: InferOptions = {}) => infer(model, input, options, callerTraceparent()) as Promise<R>,
      logger: instanceLogger(root, data),
    };
  }

  async dispose(): Promise<void> {
    const sessions = this.sessions.splice(0);
    await Promise.allSettled(sessions.map((s) => s.dispose()));
  }
}
