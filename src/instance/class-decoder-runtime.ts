import { createError } from '../errors/index.js';
import type { DecoderRuntime, DecoderStepHook, DecoderStepResult, DecoderStepRow } from '../spec/decoder-step.js';

/**
 * A @GenerativeModel class's step hook as the DecoderRuntime that DecoderSteps samples from, so a
 * class and a decoder folder share one sampler. The width of a logits row is read from what the
 * hook answers (a `last` row is one vocabulary-wide row, an `all` row one per new token) and must
 * stay the same; a row of another length fails the step with a message naming the class.
 */
export class ClassDecoderRuntime implements DecoderRuntime {
  private width?: number;

  constructor(
    private readonly hook: DecoderStepHook,
    private readonly className: string,
  ) {}

  get vocabSize(): number {
    return this.width ?? 0;
  }

  async step(rows: readonly DecoderStepRow[]): Promise<DecoderStepResult> {
    const result = await this.hook.step(rows);
    if (!Array.isArray(result?.rows) || result.rows.length !== rows.length) {
      throw this.invalid(`step() must answer { rows } with one entry per row (${rows.length}), got ${result?.rows?.length ?? typeof result}`);
    }
    rows.forEach((row, i) => {
      if (row.logits === 'none') return;
      const logits = result.rows[i];
      if (!(logits instanceof Float32Array)) throw this.invalid(`step() answered no Float32Array of logits for sequence ${row.sequenceId}, which asked for '${row.logits}'`);
      const positions = row.logits === 'all' ? row.tokenIds.length : 1;
      const width = logits.length / positions;
      this.width ??= width;
      if (width !== this.width || !Number.isInteger(width) || width === 0) {
        throw this.invalid(`step() answered ${logits.length} logits for sequence ${row.sequenceId}: expected ${positions} row(s) of ${this.width}`);
      }
    });
    return result;
  }

  release(sequenceIds: readonly number[]): void {
    this.hook.release(sequenceIds);
  }

  get copyPrefix(): DecoderRuntime['copyPrefix'] {
    const copy = this.hook.copyPrefix;
    return copy && ((from, to, length) => copy.call(this.hook, from, to, length));
  }

  private invalid(why: string): Error {
    return createError('SF_ERR_GENERATIVE_MODEL_INVALID', this.className, why);
  }
}
