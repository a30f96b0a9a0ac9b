import type { BackendSession } from '../backends/backend.js';
import type { ModelContext } from '../definition/model-context.js';
import { createError } from '../errors/index.js';
import { StreamPump, type StreamEvent } from '../wire/stream-channel.js';
import type { ExecuteCall, ExecuteOutcome, StreamCall } from '../wire/wire-format.js';
import type { TextForwardPlan } from '../wire/tensor-model-plan.js';
import { timedExecution, type InstanceHost } from './instance-host.js';
import { runTextForward } from './text-forward-pass.js';

/**
 * The instance host of a text model folder inside its worker thread: the model file's backend
 * session, fed forward batches (token ids) and answering pooled rows, as TEI's ORT backend
 * (backends/ort/src/lib.rs) pads, runs and pools in one place.
 */
export class TextForwardHost implements InstanceHost {
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
    const { inputs, outputs } = this.session.metadata();
    return timedExecution(() => runTextForward(call, inputs, outputs.map((o) => o.name), async (feeds, wanted) => {
      const produced = await this.session.run(Object.fromEntries(feeds.map((t) => [t.name, t])), wanted);
      return wanted.map((name) => produced[name]!);
    }));
  }

  openStream(call: StreamCall, credit: number, emit: (event: StreamEvent) => void): StreamPump {
    return new StreamPump(() => Promise.reject(this.textOnly(call.kind === 'endpoint' ? call.methodName : call.kind)), credit, emit);
  }

  finalize(): Promise<void> {
    return Promise.resolve();
  }

  private textOnly(what: string): Error {
    return createError('SF_ERR_EXECUTION_FAILED', this.modelName, what, "a text model folder's instance runs forward batches only");
  }
}
