import { deserializeError } from '../errors/index.js';
import type { DecoderStepCall } from '../wire/decoder-step-call.js';
import type { TensorCall } from '../wire/wire-format.js';
import type { InstanceEngine } from './instance-engine.js';
import type { Acquired } from './instance-pool.js';
import type { RequestClock } from './request-accounting.js';

/**
 * Where an iteration-level scheduler (see Scheduler) runs its steps on an InstanceEngine: it takes an
 * idle instance for a step (by index, for schedulers that bind their running set to one instance, or
 * any), and runs the step there through the engine's runBatch, which frees the instance when the
 * step ends (waking the engine's schedulers). Each step is one execution in the nv_* statistics, as
 * Triton counts a batch; a request leaves the pending count, and gets its dispatch time and timings,
 * in the first step that runs it — however many steps it then runs — as vLLM counts a request
 * scheduled once it first runs. The text generator's decoder steps and the diffusion denoiser's
 * steps both run here.
 */
export class EngineStepTarget {
  constructor(private readonly engine: InstanceEngine) {}

  get instanceCount(): number {
    return this.engine.instanceCount;
  }

  /** Takes instance `index` if it is idle; the step's run frees it. */
  tryAcquire(index: number): Acquired | undefined {
    return this.engine.acquireIndex(index);
  }

  /** Takes any idle instance, the lowest index first; the step's run (or `giveBack`) frees it. */
  tryAcquireAny(): Acquired | undefined {
    for (let index = 0; index < this.engine.instanceCount; index++) {
      const acquired = this.engine.acquireIndex(index);
      if (acquired) return acquired;
    }
    return undefined;
  }

  /** Frees an instance taken for a step that turned out to have nothing to run. */
  giveBack(acquired: Acquired): void {
    void this.engine.runBatch([], () => Promise.resolve(), acquired);
  }

  /**
   * Runs `call` as one step on the acquired instance; `admitted` are the step's requests that no
   * earlier step ran (a request whose `dispatchedMs` is unset). Resolves one result or Error per
   * row (a decoder step) or request (a tensor call, its requests joined along
   * dimension 0 by the instance) of the call, in order; rejects when the instance fails the whole call.
   */
  run<R>(acquired: unknown, call: DecoderStepCall | TensorCall, admitted: readonly RequestClock[]): Promise<(R | Error)[]> {
    return this.engine.runBatch(admitted, async (instance, sent) => {
      const outcome = await instance.execute(call);
      this.engine.recordExecution(admitted, Math.max(1, rowsOf(call)), outcome, sent);
      return outcome.results.map((result) => (result.ok ? (result.value as R) : deserializeError(result.error)));
    }, acquired as Acquired);
  }
}

/** A step's rows: a decoder step's sequences, or the tensor requests' rows along dimension 0. */
function rowsOf(call: DecoderStepCall | TensorCall): number {
  if (call.kind === 'decoder-step') return call.rows.length;
  return call.requests.reduce((sum, wire) => sum + (wire.inputs[0]?.shape[0] ?? 1), 0);
}
