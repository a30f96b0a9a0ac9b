import { performance } from 'node:perf_hooks';
import type { ModelContext } from '../definition/model-context.js';
import type { ExecuteCall, ExecuteOutcome } from '../runtime/wire-format.js';
import { BackendExecutor, type TensorExecutor } from './backend-executor.js';
import { ModuleExecutor } from './module-executor.js';
import type { TensorModelPlan, TensorWireRequest } from './tensor-model-plan.js';

const now = (): number => performance.timeOrigin + performance.now();

/**
 * The instance host of a repository model inside its worker thread, beside ModelHost for decorated
 * classes (worker-entry picks one by the boot data). Each execute call is one model execution.
 */
export class TensorModelHost {
  private constructor(private readonly executor: TensorExecutor) {}

  static async start(plan: TensorModelPlan, ctx: ModelContext): Promise<TensorModelHost> {
    const executor = plan.kind === 'module' ? await ModuleExecutor.start(plan, ctx) : await BackendExecutor.start(plan, ctx);
    return new TensorModelHost(executor);
  }

  async execute(call: ExecuteCall): Promise<ExecuteOutcome> {
    const computeStartMs = now();
    const results = await this.executor.run(call.requests.map((r) => r.payload as TensorWireRequest));
    return { results, computeStartMs, computeEndMs: now() };
  }

  finalize(): Promise<void> {
    return this.executor.finalize();
  }
}
