/**
 * A fake DecoderRuntime for the scheduler's tests: each sequence's cache is its list of tokens,
 * and the logits are one-hot on a token computed from that list, so a sequence's greedy output
 * depends only on its own tokens, and any cache mistake (a wrong cachedLength, a lost release)
 * changes the output or throws.
 */
import type { SamplingParams } from '../../src/generation/text-generator.js';
import type { DecoderRuntime, DecoderStepResult, DecoderStepRow } from '../../src/spec/decoder-step.js';

export const FAKE_VOCAB = 64;
export const FAKE_EOS = 1;

export function fakeNext(history: readonly number[]): number {
  let h = 7;
  for (const t of history) h = (h * 31 + t) % 1_000_003;
  return 2 + (h % (FAKE_VOCAB - 2));
}

/** What a sequence generates alone: `count` greedy tokens. */
export function fakeAlone(prompt: readonly number[], count: number): number[] {
  const tokens = [...prompt];
  for (let i = 0; i < count; i++) tokens.push(fakeNext(tokens));
  return tokens.slice(prompt.length);
}

export class FakeDecoder implements DecoderRuntime {
  readonly vocabSize = FAKE_VOCAB;
  readonly caches = new Map<number, number[]>();
  steps = 0;

  async step(rows: readonly DecoderStepRow[]): Promise<DecoderStepResult> {
    await new Promise((resolve) => setImmediate(resolve));
    this.steps++;
    const ids = new Set(rows.map((r) => r.sequenceId));
    if (ids.size !== rows.length) throw new Error('a sequence twice in one step');
    return {
      rows: rows.map((row) => {
        const cache = this.caches.get(row.sequenceId) ?? [];
        if (row.cachedLength > cache.length) throw new Error(`sequence ${row.sequenceId}: cachedLength ${row.cachedLength} > ${cache.length}`);
        cache.length = row.cachedLength;
        cache.push(...row.tokenIds);
        this.caches.set(row.sequenceId, cache);
        if (row.logits === 'none') return undefined;
        const logits = new Float32Array(FAKE_VOCAB * (row.logits === 'all' ? row.tokenIds.length : 1));
        logits[logits.length - FAKE_VOCAB + fakeNext(cache)] = 10;
        return logits;
      }),
    };
  }

  release(sequenceIds: readonly number[]): void {
    for (const id of sequenceIds) this.caches.delete(id);
  }

  copyPrefix(from: number, to: number, length: number): void {
    const source = this.caches.get(from);
    if (!source || source.length < length) throw new Error(`sequence ${from} holds ${source?.length ?? 0} tokens, not ${length}`);
    this.caches.set(to, source.slice(0, length));
  }
}

export function greedy(maxTokens: number, extra: Partial<SamplingParams> = {}): SamplingParams {
  return { temperature: 0, topP: 1, topK: 0, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, maxTokens, minTokens: 0, stopTokenIds: [], ignoreEos: false, ...extra };
}
