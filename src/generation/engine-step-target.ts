import { deserializeError } from '../errors/index.js';
import type { InstanceEngine } from '../engine/instance-engine.js';
import type { Acquired } from '../engine/instance-pool.js';
import type { DecoderRowResult, DecoderStepCall } from '../wire/decoder-step-call.js';
import type { GenerationSequence } from './generation-stream.js';
import type { StepTarget } from './iteration-scheduler.js';

/**
 * Steps on an InstanceEngine's instances: one instance per running set, taken while it is idle and
 * freed when the step ends (which wakes the engine's schedulers). Each step is one execution in
 * the nv_* statistics; a request counts as dispatched in the step that first runs it.
 */
export class EngineStepTarget implements StepTarget {
  constructor(private readonly engine: InstanceEngine) {}

  get instanceCount(): number {
    return this.engine.instanceCount;
  }

  tryAcquire(index: number): unknown {
    return this.engine.acquireIndex(index);
  }

  run(acquired: unknown, call: DecoderStepCall, admitted: readonly GenerationSequence[]): Promise<readonly DecoderRowResult[]> {
    return this.engine.runBatch(admitted, async (instance, sent) => {
      const outcome = await instance.execute(call);
      this.engine.recordExecution(admitted, Math.max(1, call.rows.length), outcome, sent);
      return outcome.results.map((result) => {
        if (!result.ok) throw deserializeError(result.error);
        return result.value as DecoderRowResult;
      });
    }, acquired as Acquired);
  }
}
