import { beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.js';
import { InThreadTarget } from '../../src/generation/in-thread-target.js';
import { IterationScheduler } from '../../src/generation/iteration-scheduler.js';
import type { GenerationChunk } from '../../src/generation/text-generator.js';
import { DecoderSteps } from '../../src/instance/decoder-steps.js';
import type { OnnxDecoderRuntime } from '../../src/instance/onnx-decoder-runtime.js';
import type { DecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { referenceGreedy, referenceLogits } from '../helpers/decoder-reference.js';
import { decoderRuntime } from '../helpers/decoder-runtime-fixture.js';
import { greedy } from '../helpers/fake-decoder.js';

let runtime: OnnxDecoderRuntime;
let folder: DecoderFolder;
beforeAll(async () => {
  ({ runtime, folder } = await decoderRuntime({ family: 'qwen3' }));
});

function logSoftmax64(row: Float64Array): number[] {
  const max = Math.max(...row);
  const log = max + Math.log(row.reduce((sum, v) => sum + Math.exp(v - max), 0));
  return Array.from(row, (v) => v - log);
}

describe('DecoderSteps over the ONNX runtime', () => {
  it('prompt logprobs over chunked prefill equal one-shot and the reference', async () => {
    const steps = new DecoderSteps(runtime);
    const prompt = [9, 80, 7, 150, 33, 61, 2, 240];
    const start = { sampling: greedy(1, { promptLogprobs: 2 }), promptLength: prompt.length, stopTokenIds: [] };
    const [oneShot] = await steps.run({ kind: 'decoder-step', release: [], rows: [{ sequenceId: 1, cachedLength: 0, tokenIds: prompt, logits: 'all', sample: true, start }] });
    const [first] = await steps.run({ kind: 'decoder-step', release: [], rows: [{ sequenceId: 2, cachedLength: 0, tokenIds: prompt.slice(0, 3), logits: 'all', sample: false, start }] });
    const [second] = await steps.run({ kind: 'decoder-step', release: [1], rows: [{ sequenceId: 2, cachedLength: 3, tokenIds: prompt.slice(3), logits: 'all', sample: true }] });
    const chunked = [...first!.promptLogprobs!, ...second!.promptLogprobs!];
    expect(chunked).toHaveLength(prompt.length);
    expect(chunked[0]).toBeUndefined();
    const reference = referenceLogits(folder.weights, prompt);
    for (let i = 1; i < prompt.length; i++) {
      const expected = logSoftmax64(reference[i - 1]!)[prompt[i]!]!;
      expect(Math.abs(chunked[i]!.logprob - expected)).toBeLessThan(1e-4);
      expect(Math.abs(oneShot!.promptLogprobs![i]!.logprob - expected)).toBeLessThan(1e-4);
      expect(chunked[i]!.top!.map((t) => t.tokenId)).toEqual(oneShot!.promptLogprobs![i]!.top!.map((t) => t.tokenId));
    }
    expect(second!.token!.tokenId).toBe(oneShot!.token!.tokenId);
  });

  it('the scheduler under a tiny KV pool preempts, recomputes, and still gives the reference greedy continuations; seeded draws are unchanged by it', async () => {
    const run = async (kvBlocks: number, temperature: number): Promise<{ tokens: number[][]; preemptions: number }> => {
      const scheduler = new IterationScheduler('tiny', { maxNumSeqs: 4, maxNumBatchedTokens: 16, kvBlocks }, { eosTokenIds: [], maxModelLen: 256 }, new InThreadTarget(runtime), systemClock);
      const prompts = [[5, 6, 7, 8, 9, 10, 11, 12], [40, 41], [100, 90, 80, 70, 60], [3]];
      const tokens = await Promise.all(prompts.map(async (prompt, i) => {
        const sequence = scheduler.sequence({ requestId: String(i), promptTokenIds: prompt, sampling: { ...greedy(12, { ignoreEos: true }), temperature, seed: 100 + i } });
        void scheduler.submit(sequence, {});
        const out: GenerationChunk[] = [];
        for await (const chunk of sequence) out.push(chunk);
        return out.flatMap((c) => c.tokens.map((t) => t.tokenId));
      }));
      if (temperature === 0) tokens.forEach((t, i) => expect(t).toEqual(referenceGreedy(folder.weights, prompts[i]!, 12)));
      return { tokens, preemptions: scheduler.preemptions };
    };
    const tight = await run(3, 0);
    expect(tight.preemptions).toBeGreaterThan(0);
    const roomy = await run(64, 1);
    const squeezed = await run(3, 1);
    expect(squeezed.preemptions).toBeGreaterThan(0);
    expect(squeezed.tokens).toEqual(roomy.tokens);
  });

  it('a prefix-cache hit (KV copied from a finished request) gives the reference greedy continuation', async () => {
    const target = new InThreadTarget(runtime, true);
    const scheduler = new IterationScheduler('tiny', { maxNumSeqs: 4, maxNumBatchedTokens: 64, kvBlocks: 16, prefixCaching: true }, { eosTokenIds: [], maxModelLen: 256 }, target, systemClock);
    const shared = Array.from({ length: 36 }, (_, i) => (i * 13 + 5) % 280);
    const run = async (prompt: number[]): Promise<number[]> => {
      const sequence = scheduler.sequence({ requestId: 'p', promptTokenIds: prompt, sampling: greedy(6, { ignoreEos: true }) });
      void scheduler.submit(sequence, {});
      const out: GenerationChunk[] = [];
      for await (const chunk of sequence) out.push(chunk);
      return out.flatMap((c) => c.tokens.map((t) => t.tokenId));
    };
    await run(shared);
    const later = [...shared.slice(0, 33), 7, 8, 9];
    expect(await run(later)).toEqual(referenceGreedy(folder.weights, later, 6));
    expect(target.calls.flatMap((c) => c.rows).some((r) => r.copyFrom !== undefined && r.cachedLength === 32)).toBe(true);
  });
});
