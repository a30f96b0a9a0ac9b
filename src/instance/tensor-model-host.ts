import type { ModelContext } from '../definition/model-context.js';
import { createError } from '../errors/index.js';
import { type StreamEvent, StreamPump } from '../wire/stream-channel.js';
import { firstTrace, runTraced } from './caller-trace.js';
import type { ExecuteCall, ExecuteOutcome, StreamCall } from '../wire/wire-format.js';
import { BackendExecutor, type TensorExecutor } from './backend-executor.js';
import { timedExecution, type InstanceHost } from './instance-host.js';
import { ModuleExecutor } from './module-executor.js';
import type { TensorModelPlan } from '../wire/tensor-model-plan.js';

/**
 * The instance host of a repository model inside its worker thread, beside ModelHost for decorated
 * classes (worker-entry picks one by the boot data). Each execute call is one model execution; each
 * openStream call is one request of a decoupled model, streamed response by response.
 */
export class TensorModelHost implements InstanceHost {
  private constructor(
    private readonly executor: TensorExecutor,
    private readonly modelName: string,
  ) {}

  static async start(plan: TensorModelPlan, ctx: ModelContext): Promise<TensorModelHost> {
    const executor = plan.kind === 'module' ? await ModuleExecutor.start(plan, ctx) : await BackendExecutor.start(plan, ctx);
    return new TensorModelHost(executor, ctx.modelName);
  }

  async execute(call: ExecuteCall): Promise<ExecuteOutcome> {
    if (call.kind !== 'tensor') throw this.noEndpoints(call.kind === 'endpoint' ? call.methodName : call.kind);
    return timedExecution(() => runTraced(firstTrace(call), () => this.executor.run(call.requests)));
  }

  /**
   * Runs the call's one request on a decoupled model; the returned pump (started by the caller with
   * `run()`) pulls the model's responses as credit allows and emits each as a StreamedResult chunk.
   */
  openStream(call: StreamCall, credit: number, emit: (event: StreamEvent) => void): StreamPump {
    const open = async (): Promise<AsyncIterator<unknown>> => {
      if (call.kind !== 'tensor') throw this.noEndpoints(call.methodName);
      const executor = this.executor;
      if (!(executor instanceof ModuleExecutor) || !executor.decoupled) {
        throw createError('SF_ERR_EXECUTION_FAILED', this.modelName, 'execute', 'only a decoupled model.ts / model.js model streams its responses');
      }
      return executor.stream(call.requests[0]);
    };
    return new StreamPump(open, credit, emit);
  }

  /** A repository model is reached through its tensors only. */
  private noEndpoints(methodName: string): Error {
    return createError('SF_ERR_EXECUTION_FAILED', this.modelName, methodName, 'a repository model has no endpoint methods');
  }

  finalize(): Promise<void> {
    return this.executor.finalize();
  }
}
