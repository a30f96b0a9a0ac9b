import { describe, expect, it } from 'vitest';
import { ClassDecoderRuntime } from '../../src/instance/class-decoder-runtime.js';
import { DecoderSteps } from '../../src/instance/decoder-steps.js';
import type { DecoderStepHook, DecoderStepResult, DecoderStepRow } from '../../src/spec/decoder-step.js';
import { greedy } from '../helpers/fake-decoder.js';

const VOCAB = 8;

/** A step hook whose logits favour (last token + 1) mod VOCAB, remembering what it was told. */
class CountingHook implements DecoderStepHook {
  readonly released: number[] = [];
  readonly seen: DecoderStepRow[] = [];

  constructor(private readonly width = VOCAB) {}

  step(rows: readonly DecoderStepRow[]): DecoderStepResult {
    this.seen.push(...rows);
    return {
      rows: rows.map((row) => {
        if (row.logits === 'none') return undefined;
        const positions = row.logits === 'all' ? row.tokenIds : row.tokenIds.slice(-1);
        const out = new Float32Array(positions.length * this.width);
        positions.forEach((token, k) => (out[k * this.width + ((token + 1) % VOCAB)] = 5));
        return out;
      }),
    };
  }

  release(sequenceIds: readonly number[]): void {
    this.released.push(...sequenceIds);
  }
}

const start = (promptLength: number) => ({ sampling: greedy(4), promptLength, stopTokenIds: [] });

describe('ClassDecoderRuntime: a class step hook under the one sampler (DecoderSteps)', () => {
  it('samples each row from the logits the hook answers, and passes releases on before the step', async () => {
    const hook = new CountingHook();
    const steps = new DecoderSteps(new ClassDecoderRuntime(hook, 'Counting'));
    const first = await steps.run({ kind: 'decoder-step', release: [], rows: [
      { sequenceId: 1, cachedLength: 0, tokenIds: [2, 3], logits: 'last', sample: true, start: start(2) },
      { sequenceId: 2, cachedLength: 0, tokenIds: [6, 7], logits: 'all', sample: true, start: { ...start(2), sampling: greedy(4, { promptLogprobs: 0 }) } },
    ] });
    expect(first.map((r) => r.token?.tokenId)).toEqual([4, 0]);
    // The 'all' row's width is read as a vocabulary row per token: the second prompt token is scored after the first.
    expect(first[1]!.promptLogprobs?.[1]?.tokenId).toBe(7);
    const next = await steps.run({ kind: 'decoder-step', release: [2], rows: [{ sequenceId: 1, cachedLength: 2, tokenIds: [4], logits: 'last', sample: true }] });
    expect(next[0]!.token?.tokenId).toBe(5);
    expect(hook.released).toEqual([2]);
    expect(hook.seen.at(-1)).toMatchObject({ sequenceId: 1, cachedLength: 2, tokenIds: [4] });
  });

  it('fails a step whose logits are not whole vocabulary rows, or change width, naming the class', async () => {
    const runtime = new ClassDecoderRuntime(new CountingHook(), 'Counting');
    await runtime.step([{ sequenceId: 1, cachedLength: 0, tokenIds: [1], logits: 'last' }]);
    await expect(runtime.step([{ sequenceId: 1, cachedLength: 1, tokenIds: [2, 3], logits: 'all' }])).resolves.toBeDefined();
    const wider = new ClassDecoderRuntime(new CountingHook(VOCAB), 'Counting');
    await expect(wider.step([{ sequenceId: 1, cachedLength: 0, tokenIds: [1, 2, 3], logits: 'last' }, { sequenceId: 2, cachedLength: 0, tokenIds: [1, 2], logits: 'all' }])).resolves.toBeDefined();
    const lying = new ClassDecoderRuntime({ step: () => ({ rows: [new Float32Array(VOCAB + 1)] }), release: () => undefined }, 'Lying');
    await lying.step([{ sequenceId: 1, cachedLength: 0, tokenIds: [1, 2], logits: 'last' }]);
    await expect(lying.step([{ sequenceId: 1, cachedLength: 2, tokenIds: [1, 2], logits: 'all' }])).rejects.toMatchObject({ code: 'SF_ERR_GENERATIVE_MODEL_INVALID', message: expect.stringContaining('Lying') });
    const missing = new ClassDecoderRuntime({ step: () => ({ rows: [] }), release: () => undefined }, 'Missing');
    await expect(missing.step([{ sequenceId: 1, cachedLength: 0, tokenIds: [1], logits: 'last' }])).rejects.toMatchObject({ code: 'SF_ERR_GENERATIVE_MODEL_INVALID' });
  });

  it('offers copyPrefix only when the hook has one', () => {
    expect(new ClassDecoderRuntime(new CountingHook(), 'Counting').copyPrefix).toBeUndefined();
    const copied: number[][] = [];
    const hook = Object.assign(new CountingHook(), { copyPrefix: (from: number, to: number, length: number) => void copied.push([from, to, length]) });
    new ClassDecoderRuntime(hook, 'Copying').copyPrefix!(1, 2, 16);
    expect(copied).toEqual([[1, 2, 16]]);
  });
});
