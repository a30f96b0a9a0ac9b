import type { BackendSession } from '../backends/backend.js';
import type { ModelContext } from '../definition/model-context.js';
import { createError } from '../errors/index.js';
import { now } from '../engine/request-accounting.js';
import { StreamPump, type StreamEvent } from '../wire/stream-channel.js';
import type { ExecuteCall, ExecuteOutcome } from '../wire/wire-format.js';
import { runTextForward } from './text-forward-pass.js';

/** What a text model folder's instance boots from: its model file and the backend's session options. */
export interface TextForwardPlan {
  readonly kind: 'text-forward';
  /** Absolute path of the folder's model.onnx (or its _fp16 twin) or model.om. */
  readonly file: string;
  readonly sessionOptions: Readonly<Record<string, unknown>>;
}

/**
 * The instance host of a text model folder inside its worker thread: the model file's backend
 * session, fed forward batches (token ids) and answering pooled rows, as TEI's ORT backend
 * (backends/ort/src/lib.rs) pads, runs and pools in one place.
 */
export class TextForwardHost {
  private constructor(
    private readonly session: BackendSession,
    private readonly modelName: string,
  ) {}

  /** The session is opened through ctx.loadModel, which disposes of it after finalize. */
  static async start(plan: TextForwardPlan, ctx: ModelContext): Promise<TextForwardHost> {
    return new TextForwardHost(await ctx.loadModel(plan.file, { options: plan.sessionOptions }), ctx.modelName);
  }

  async execute(call: ExecuteCall): Promise<ExecuteOutcome> {
    if (call.kind !== 'text-forward') throw this.textOnly(call.kind === 'endpoint' ? call.methodName : call.kind);
    const computeStartMs = now();
    const { inputs, outputs } = this.session.metadata();
    const results = await runTextForward(call, inputs, outputs.map((o) => o.name), async (feeds, wanted) => {
      const produced = await this.session.run(Object.fromEntries(feeds.map((t) => [t.name, t])), wanted);
      return wanted.map((name) => produced[name]!);
    });
    return { results, computeStartMs, computeEndMs: now() };
  }

  openStream(call: ExecuteCall, credit: number, emit: (event: StreamEvent) => void): StreamPump {
    return new StreamPump(() => Promise.reject(this.textOnly(call.kind === 'endpoint' ? call.methodName : call.kind)), credit, emit);
  }

  finalize(): Promise<void> {
    return Promise.resolve();
  }

  private textOnly(what: string): Error {
    return createError('SF_ERR_EXECUTION_FAILED', this.modelName, what, "a text model folder's instance runs forward batches only");
  }
}
