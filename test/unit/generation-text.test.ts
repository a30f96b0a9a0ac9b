import { describe, expect, it } from 'vitest';
import { generationText, type TextPiece } from '../../src/generation/generation-text.js';
import { IncrementalDetokenizer } from '../../src/generation/incremental-detokenizer.js';
import { StopStringMatcher } from '../../src/generation/stop-strings.js';
import type { SamplingParams } from '../../src/generation/text-generator.js';
import { FakeGenerator, QWEN3_IM_END, qwen3Tokenizer } from '../helpers/fake-generator.js';

const SAMPLING: SamplingParams = {
  temperature: 0, topP: 1, topK: 0, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1,
  maxTokens: 100, minTokens: 0, stopTokenIds: [], ignoreEos: false,
};

describe('IncrementalDetokenizer', async () => {
  const tokenizer = await qwen3Tokenizer();

  it('sends deltas that add up to the full decode and never split a UTF-8 character', async () => {
    const text = 'Héllo, 世界! 🙂 naïve café — ok';
    const ids = await tokenizer.encode(text, false);
    const detok = new IncrementalDetokenizer(tokenizer, [], true);
    const deltas: string[] = [];
    for (const id of ids) deltas.push(await detok.push([id]));
    deltas.push(await detok.flush());
    expect(deltas.join('')).toBe(text);
    for (const delta of deltas) expect(delta).not.toContain('\uFFFD');
    // The emoji is several byte-level tokens: some steps must have waited.
    expect(deltas.filter((d) => d === '').length).toBeGreaterThan(0);
  });

  it('joins the first output tokens onto the prompt’s as a full decode would', async () => {
    const prompt = await tokenizer.encode('The capital of France', false);
    const output = await tokenizer.encode(' is Paris.', false);
    const detok = new IncrementalDetokenizer(tokenizer, prompt, true);
    let text = '';
    for (const id of output) text += await detok.push([id]);
    expect(text).toBe(' is Paris.');
  });

  it('skips special tokens when asked', async () => {
    const detok = new IncrementalDetokenizer(tokenizer, [], true);
    const ids = [...(await tokenizer.encode('done', false)), QWEN3_IM_END];
    expect((await detok.push(ids)) + (await detok.flush())).toBe('done');
    const keep = new IncrementalDetokenizer(tokenizer, [], false);
    expect((await keep.push(ids)) + (await keep.flush())).toBe('done<|im_end|>');
  });
});

describe('StopStringMatcher', () => {
  it('cuts at the first stop string and holds back a partial match until it is decided', () => {
    const m = new StopStringMatcher(['STOP', '\n\n'], false);
    expect(m.push('Hello ST')).toEqual({ text: 'Hello ' });
    expect(m.push('ART go S')).toEqual({ text: 'START go ' });
    expect(m.push('TOP and more')).toEqual({ text: '', stop: 'STOP' });
    expect(m.push('later')).toEqual({ text: '' });
  });

  it('keeps the stop string with include_stop_str_in_output', () => {
    const m = new StopStringMatcher(['world'], true);
    expect(m.push('hello wor')).toEqual({ text: 'hello ' });
    expect(m.push('ld!')).toEqual({ text: 'world', stop: 'world' });
  });

  it('releases held text at the end, and does not match while inactive (min_tokens)', () => {
    const m = new StopStringMatcher(['abc'], false);
    expect(m.push('xab')).toEqual({ text: 'x' });
    expect(m.flush()).toBe('ab');
    const early = new StopStringMatcher(['abc'], false);
    expect(early.push('abc', false)).toEqual({ text: 'abc' });
  });

  it('the earliest match wins', () => {
    expect(new StopStringMatcher(['yz', 'b'], false).push('abcxyz')).toEqual({ text: 'a', stop: 'b' });
  });
});

describe('generationText', async () => {
  const tokenizer = await qwen3Tokenizer();
  const collect = async (pieces: AsyncIterable<TextPiece>) => {
    const all: TextPiece[] = [];
    for await (const piece of pieces) all.push(piece);
    return all;
  };

  it('stops the generation when a stop string matches, and drops the rest', async () => {
    const answer = await tokenizer.encode('one, two, three, four, five', false);
    const generator = new FakeGenerator(() => answer);
    const generation = generator.generate({ requestId: 'r', promptTokenIds: [1], sampling: SAMPLING });
    const pieces = await collect(generationText(generation, tokenizer, { promptTokenIds: [1], stop: ['three'], includeStopString: false, skipSpecialTokens: true, minTokens: 0 }));
    expect(pieces.map((p) => p.text).join('')).toBe('one, two, ');
    expect(pieces.at(-1)).toMatchObject({ finishReason: 'stop', stopReason: 'three' });
    expect(pieces.flatMap((p) => p.tokens).length).toBeLessThan(answer.length);
    expect(generator.finished).toBe(1);
  });

  it('ends with the generator’s finish reason and its stop token id', async () => {
    const answer = [...(await tokenizer.encode('a b', false)), 42];
    const generation = new FakeGenerator(() => answer).generate({ requestId: 'r', promptTokenIds: [1], sampling: { ...SAMPLING, stopTokenIds: [42] } });
    const pieces = await collect(generationText(generation, tokenizer, { promptTokenIds: [1], stop: [], includeStopString: false, skipSpecialTokens: true, minTokens: 0 }));
    expect(pieces.at(-1)).toMatchObject({ finishReason: 'stop', stopReason: 42 });
  });
});
