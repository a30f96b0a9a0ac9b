import { DecoderSteps } from '../instance/decoder-steps.js';
import type { DecoderRuntime } from '../spec/decoder-step.js';
import type { ConstraintVocabulary } from '../spec/structured-output.js';
import type { DecoderRowResult, DecoderStepCall } from '../wire/decoder-step-call.js';
import type { StepTarget } from './iteration-scheduler.js';

/**
 * Steps run on a decoder runtime in this thread: what the scheduler's tests and the benchmark's
 * in-process baseline drive. Servers run steps on their engine's instances (generator-engine.ts).
 */
export class InThreadTarget implements StepTarget {
  readonly instanceCount = 1;
  readonly steps: DecoderSteps;
  private busy = false;
  /** Every call, in order, for tests to check. */
  readonly calls: DecoderStepCall[] = [];

  /** `vocabulary`: the grammar engine's, for structured outputs (as a decoder host reads its tokenizer). */
  constructor(runtime: DecoderRuntime, private readonly record = false, vocabulary?: () => Promise<ConstraintVocabulary>) {
    this.steps = new DecoderSteps(runtime, vocabulary);
  }

  tryAcquire(): unknown {
    if (this.busy) return undefined;
    this.busy = true;
    return this;
  }

  async run(_acquired: unknown, call: DecoderStepCall): Promise<readonly DecoderRowResult[]> {
    if (this.record) this.calls.push(call);
    try {
      return await this.steps.run(call);
    } finally {
      this.busy = false;
    }
  }
}
