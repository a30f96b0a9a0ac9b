import { describe, expect, it } from 'vitest';
import type { SamplingParams } from '../../src/generation/text-generator.js';
import { counterUniform, logSoftmax, processLogits, sampleToken, topEntries, uniformFor, type SampleInput } from '../../src/instance/token-sampler.js';

const GREEDY: SamplingParams = {
  temperature: 0, topP: 1, topK: 0, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, maxTokens: 16, minTokens: 0, stopTokenIds: [], ignoreEos: false,
};
const input = (logits: number[], sampling: Partial<SamplingParams> = {}, rest: Partial<SampleInput> = {}): SampleInput => ({
  logits: Float32Array.from(logits), sampling: { ...GREEDY, ...sampling }, history: [], promptLength: 0, stopTokenIds: [], ...rest,
});
const never = (): number => {
  throw new Error('greedy draws nothing');
};

describe('sampleToken', () => {
  it('temperature 0 is greedy; logit_bias moves the choice', () => {
    expect(sampleToken(input([0.1, 3, 2]), never).tokenId).toBe(1);
    expect(sampleToken(input([0.1, 3, 2], { logitBias: new Map([[2, 1.5]]) }), never).tokenId).toBe(2);
  });

  it('min_tokens holds back the stop tokens until enough tokens were generated', () => {
    const stopTokenIds = [1];
    expect(sampleToken(input([0, 5, 1], { minTokens: 2 }, { history: [7, 8], promptLength: 1, stopTokenIds }), never).tokenId).toBe(2);
    expect(sampleToken(input([0, 5, 1], { minTokens: 2 }, { history: [7, 8, 9], promptLength: 1, stopTokenIds }), never).tokenId).toBe(1);
  });

  it('a grammar mask forbids what its bits leave out', () => {
    const allowed = Int32Array.of(0b101);
    expect(sampleToken(input([0, 5, 1], {}, { allowed }), never).tokenId).toBe(2);
  });

  it("repetition penalty is HF's multiplicative rule over prompt and output; presence/frequency are OpenAI's over output", () => {
    const rep = processLogits(input([2, -2, 1], { repetitionPenalty: 2 }, { history: [0, 1], promptLength: 2 }));
    expect([...rep]).toEqual([1, -4, 1]);
    const pen = processLogits(input([2, 2, 2], { presencePenalty: 0.5, frequencyPenalty: 0.25 }, { history: [0, 1, 1, 2], promptLength: 1 }));
    // Token 0 is only in the prompt; token 1 was generated twice, token 2 once.
    expect([...pen]).toEqual([2, 2 - 0.5 - 0.5, 2 - 0.5 - 0.25]);
  });

  it('top_k 1 and a tiny top_p are greedy whatever the draw; min_p drops unlikely tokens', () => {
    const logits = [1, 4, 3.5, 0];
    expect(sampleToken(input(logits, { temperature: 1, topK: 1 }), () => 0.99).tokenId).toBe(1);
    expect(sampleToken(input(logits, { temperature: 1, topP: 0.01 }), () => 0.99).tokenId).toBe(1);
    // p(2)/p(1) = e^-0.5 ≈ 0.61: kept by min_p 0.5, dropped by min_p 0.7.
    expect(sampleToken(input(logits, { temperature: 1, minP: 0.5 }), () => 0.999).tokenId).toBe(2);
    expect(sampleToken(input(logits, { temperature: 1, minP: 0.7 }), () => 0.999).tokenId).toBe(1);
  });

  it('draws follow the softmax of logits / temperature', () => {
    const logits = [0, Math.log(3), -Infinity];
    const counts = [0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[sampleToken(input(logits, { temperature: 1, seed: 7 }), uniformFor({ ...GREEDY, seed: 7 }, i)).tokenId]!++;
    expect(counts[2]).toBe(0);
    expect(counts[1]! / 4000).toBeGreaterThan(0.7);
    expect(counts[1]! / 4000).toBeLessThan(0.8);
  });

  it('a seeded draw depends only on (seed, output index)', () => {
    expect(counterUniform(42, 3)).toBe(counterUniform(42, 3));
    expect(counterUniform(42, 3)).not.toBe(counterUniform(42, 4));
    expect(counterUniform(42, 3)).not.toBe(counterUniform(43, 3));
    expect(counterUniform(2 ** 40 + 1, 0)).not.toBe(counterUniform(1, 0));
    const values = Array.from({ length: 1000 }, (_, i) => counterUniform(9, i));
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(1);
    expect(values.reduce((a, b) => a + b, 0) / 1000).toBeCloseTo(0.5, 1);
  });

  it('logprobs are the raw log-softmax (vLLM raw_logprobs), with up to 20 alternatives, highest first', () => {
    const logits = Array.from({ length: 40 }, (_, i) => i / 10);
    const sampled = sampleToken(input(logits, { logprobs: 25, logitBias: new Map([[0, 100]]) }), never);
    const raw = logSoftmax(Float32Array.from(logits));
    expect(sampled.tokenId).toBe(0);
    expect(sampled.logprob).toBeCloseTo(raw[0]!, 5);
    expect(sampled.top).toHaveLength(20);
    expect(sampled.top![0]).toEqual({ tokenId: 39, logprob: raw[39] });
    expect(sampleToken(input(logits, { logprobs: 0 }), never).top).toBeUndefined();
  });
});

describe('topEntries', () => {
  it('keeps the highest values, ties by lower id', () => {
    expect(topEntries(Float32Array.of(1, 5, 5, 2, -Infinity), 3)).toEqual([1, 2, 3]);
  });
});
