import { describe, expect, it, vi } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import type { InferenceModel } from '../../src/inference/inference-model.js';
import { DEFAULT_TEXT_LIMITS, TextEngine } from '../../src/text/text-engine.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { CLASSIFIER_LABELS, fakeForward, forwardOver, HIDDEN, hiddenOf, tableValue, textModelFor, WORDPIECE_TOKENIZER, type ForwardLog } from '../helpers/text-model-fixture.js';

const CLS = 2;
const SEP = 3;

/** The reference: what the fake forward pass gives a text alone (no padding), pooled and normalised by hand. */
async function referenceEmbedding(text: string, pooling: 'cls' | 'mean' | 'last-token', normalize = true): Promise<number[]> {
  const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
  const ids = Array.from((await tokenizer.encode(text)).ids);
  const hidden = ids.map((id, position) => Array.from({ length: HIDDEN }, (_, c) => hiddenOf(id, position, 0, c)));
  const pooled = pooling === 'cls' ? hidden[0] : pooling === 'last-token' ? hidden[hidden.length - 1]
    : hidden[0].map((_, c) => hidden.reduce((sum, row) => sum + row[c], 0) / hidden.length);
  if (!normalize) return pooled;
  const norm = Math.sqrt(pooled.reduce((s, x) => s + x * x, 0));
  return pooled.map((x) => x / norm);
}

function expectClose(actual: ArrayLike<number>, expected: readonly number[]): void {
  expect(actual.length).toBe(expected.length);
  Array.from(actual).forEach((x, i) => expect(x).toBeCloseTo(expected[i], 5));
}

async function rejection(promise: Promise<unknown>): Promise<ServeFnError> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ServeFnError);
  return err as ServeFnError;
}

/** A forward model that holds every batch until released, to see what is queued meanwhile. */
function heldForward(inner: InferenceModel): { model: InferenceModel; release: () => void; started: () => number } {
  let started = 0;
  const waiting: (() => void)[] = [];
  return {
    model: { info: inner.info, ready: () => true, infer: async (request) => { started++; await new Promise<void>((r) => waiting.push(r)); return inner.infer(request); } },
    release: () => waiting.splice(0).forEach((r) => r()),
    started: () => started,
  };
}

describe('TextEngine: embeddings', () => {
  it('pools CLS and L2-normalises, as computed by hand from the same forward pass', async () => {
    const model = await textModelFor('embed');
    const answer = await model.embed(['The quick brown fox', 'what is deep learning?']);
    expectClose(answer.values[0], await referenceEmbedding('The quick brown fox', 'cls'));
    expectClose(answer.values[1], await referenceEmbedding('what is deep learning?', 'cls'));
    expect(answer.promptTokens).toBe((await model.tokenize(['The quick brown fox', 'what is deep learning?'])).flat().length);
    expect(model.info.dimensions).toBe(HIDDEN);
  });

  it('gives a text the same mean-pooled vector alone and padded beside a longer one (the mask is honoured)', async () => {
    const model = await textModelFor('embed', { pooling: 'mean' });
    const [alone] = (await model.embed(['the fox'])).values;
    const [batched] = (await model.embed(['the fox', 'the quick brown fox jumps over the lazy dog'])).values;
    expectClose(batched, Array.from(alone));
    expectClose(alone, await referenceEmbedding('the fox', 'mean'));
  });

  it('pads left for last-token pooling, so every row ends on its own last token', async () => {
    const log: ForwardLog = { batches: [] };
    // First come, first served, so the two lengths share one batch and the shorter is padded.
    const model = await textModelFor('embed', { pooling: 'last-token', log, limits: { batchByLength: false } });
    const answer = await model.embed(['the fox', 'the quick brown fox jumps']);
    expect(log.batches[0].mask[0].slice(0, 3)).toEqual([0, 0, 0]);
    expect(log.batches[0].mask[0].at(-1)).toBe(1);
    expectClose(answer.values[0], await referenceEmbedding('the fox', 'last-token'));
  });

  it('keeps a Matryoshka prefix and normalises it after cutting; normalize false leaves the vector as pooled', async () => {
    const model = await textModelFor('embed');
    const full = await referenceEmbedding('the fox', 'cls', false);
    const [raw] = (await model.embed(['the fox'], { normalize: false })).values;
    expectClose(raw, full);
    const [cut] = (await model.embed(['the fox'], { dimensions: 3 })).values;
    const norm = Math.sqrt(full.slice(0, 3).reduce((s, x) => s + x * x, 0));
    expectClose(cut, full.slice(0, 3).map((x) => x / norm));
    expect((await rejection(model.embed(['the fox'], { dimensions: 0 }))).code).toBe('SF_ERR_TEXT_VALIDATION');
    expect((await rejection(model.embed(['the fox'], { dimensions: HIDDEN + 1 }))).statusCode).toBe(422);
  });

  it('prepends a named prompt, and refuses a prompt name the model does not have', async () => {
    const model = await textModelFor('embed');
    const [prompted] = (await model.embed(['the fox'], { promptName: 'query' })).values;
    expectClose(prompted, await referenceEmbedding('query: the fox', 'cls'));
    const err = await rejection(model.embed(['the fox'], { promptName: 'nope' }));
    expect(err).toMatchObject({ code: 'SF_ERR_TEXT_VALIDATION', statusCode: 422 });
    expect(err.message).toContain('query, passage');
  });

  it('uses token ids as given, without special tokens, and refuses ids outside the vocabulary', async () => {
    const log: ForwardLog = { batches: [] };
    const model = await textModelFor('embed', { log });
    await model.embed([[10, 11, 12]]);
    expect(log.batches[0].ids[0]).toEqual([10, 11, 12]);
    const err = await rejection(model.embed([[5, model.tokenizer.vocabSize]]));
    expect(err).toMatchObject({ code: 'SF_ERR_TEXT_VALIDATION', statusCode: 422 });
  });
});

describe('TextEngine: limits and truncation', () => {
  const long = 'the quick brown fox jumps over the lazy dog '.repeat(6);

  it('refuses an input over the model limit when truncation is off, and cuts it keeping [CLS] and [SEP] when on', async () => {
    const log: ForwardLog = { batches: [] };
    const model = await textModelFor('embed', { maxInputLength: 16, log, limits: { autoTruncate: false } });
    const err = await rejection(model.embed([long]));
    expect(err).toMatchObject({ code: 'SF_ERR_TEXT_TOO_LONG', statusCode: 422 });
    expect(err.message).toMatch(/less than 16 tokens\. Given: \d+/);
    await model.embed([long], { truncate: true });
    const ids = log.batches[0].ids[0];
    expect(ids).toHaveLength(16);
    expect([ids[0], ids[15]]).toEqual([CLS, SEP]);
    await model.embed([long], { truncate: true, truncationDirection: 'left' });
    const tokenizer = model.tokenizer;
    const all = Array.from((await tokenizer.encode(long)).ids);
    expect(log.batches[1].ids[0]).toEqual([CLS, ...all.slice(all.length - 15, all.length - 1), SEP]);
  });

  it('pads every batch to the length a model was compiled for (an .om with a static sequence dimension), and cuts to it', async () => {
    const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
    const log: ForwardLog = { batches: [] };
    const inner = fakeForward('embed', tokenizer.vocabSize, log);
    const compiled = { ...inner, info: { ...inner.info, inputs: inner.info.inputs.map((spec) => ({ ...spec, shape: [-1, 12] })) } };
    const spec = { name: 'static', modelId: 'test', task: 'embed' as const, pooling: 'mean' as const, maxInputLength: 32, prompts: {}, labels: [] };
    const model = new TextEngine(spec, tokenizer, forwardOver(compiled), { limits: DEFAULT_TEXT_LIMITS, computeType: 'npu' });
    const answer = await model.embed(['the fox', long]);
    expect(log.batches[0]).toMatchObject({ rows: 2, length: 12 });
    expect(log.batches[0].ids[1].at(-1)).toBe(SEP);
    expectClose(answer.values[0], await referenceEmbedding('the fox', 'mean'));
    expect(model.info.maxInputLength).toBe(12);
  });

  it('refuses before tokenizing: a request over the client batch size, or for another task, starts no encode', async () => {
    const model = await textModelFor('rerank', { limits: { maxClientBatchSize: 2 } });
    const encode = vi.spyOn(model.tokenizer, 'encode');
    expect((await rejection(model.predict(['a', 'b', 'c']))).code).toBe('SF_ERR_TEXT_BATCH_TOO_LARGE');
    // A bad input to a model of the wrong task: one clear 424, and no encode left to reject unhandled.
    expect((await rejection(model.embed([[99_999_999], 'x'], { promptName: 'nope' }))).code).toBe('SF_ERR_TEXT_WRONG_TASK');
    expect(encode).not.toHaveBeenCalled();
  });

  it('answers 413 over the client batch size and 400 for no inputs', async () => {
    const model = await textModelFor('embed', { limits: { maxClientBatchSize: 2 } });
    expect(await rejection(model.embed(['a', 'b', 'c']))).toMatchObject({ code: 'SF_ERR_TEXT_BATCH_TOO_LARGE', statusCode: 413, message: 'batch size 3 > maximum allowed batch size 2' });
    expect(await rejection(model.embed([]))).toMatchObject({ code: 'SF_ERR_TEXT_EMPTY', statusCode: 400 });
  });

  it('batches by length by default: texts of about one length together, each answered in its place', async () => {
    const log: ForwardLog = { batches: [] };
    const model = await textModelFor('embed', { log });
    const texts = ['the fox', 'the quick brown fox jumps over the lazy dog', 'a dog', 'paris is the capital of france today'];
    const answer = await model.embed(texts);
    for (const batch of log.batches) {
      const lengths = batch.mask.map((row) => row.reduce((a, b) => a + b, 0));
      expect(lengths.reduce((a, b) => a + b, 0) / (batch.rows * batch.length)).toBeGreaterThanOrEqual(0.8);
    }
    expect(log.batches.length).toBeGreaterThan(1);
    for (const [i, text] of texts.entries()) expectClose(answer.values[i], await referenceEmbedding(text, 'cls'));
  });

  it('closes forward batches at the padded token budget, splits a client batch across them, and answers in order', async () => {
    const log: ForwardLog = { batches: [] };
    const model = await textModelFor('embed', { log, limits: { maxBatchTokens: 24 } });
    const texts = ['the fox', 'the quick brown fox jumps over the lazy dog', 'a', 'paris is the capital of france', 'how do i bake bread'];
    const answer = await model.embed(texts);
    for (const batch of log.batches) expect(batch.rows === 1 || batch.rows * batch.length <= 24).toBe(true);
    expect(log.batches.length).toBeGreaterThan(1);
    for (const [i, text] of texts.entries()) expectClose(answer.values[i], await referenceEmbedding(text, 'cls'));
  });

  it('answers 429 at once when a request would take more inputs than maxConcurrentRequests leaves, and serves again after', async () => {
    const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
    const held = heldForward(fakeForward('embed', tokenizer.vocabSize));
    const spec = { name: 'held', modelId: 'test', task: 'embed' as const, pooling: 'cls' as const, maxInputLength: 32, prompts: {}, labels: [] };
    const model = new TextEngine(spec, tokenizer, forwardOver(held.model), { limits: { ...DEFAULT_TEXT_LIMITS, maxConcurrentRequests: 3 }, computeType: 'cpu' });
    const first = model.embed(['a', 'b']);
    await expect.poll(held.started).toBe(1);
    expect(await rejection(model.embed(['c', 'd']))).toMatchObject({ code: 'SF_ERR_TEXT_OVERLOADED', statusCode: 429 });
    const second = model.embed(['c']);
    held.release();
    await first;
    await expect.poll(held.started).toBe(2);
    held.release();
    expect((await second).values).toHaveLength(1);
  });

  it('turns a forward failure into 424 with its cause, and a 503 from the forward model stays a 503', async () => {
    const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
    const inner = fakeForward('embed', tokenizer.vocabSize);
    const spec = { name: 'failing', modelId: 'test', task: 'embed' as const, pooling: 'cls' as const, maxInputLength: 32, prompts: {}, labels: [] };
    const boom = new Error('session.run exploded');
    const failing = new TextEngine(spec, tokenizer, forwardOver({ ...inner, infer: async () => { throw boom; } }), { limits: DEFAULT_TEXT_LIMITS, computeType: 'cpu' });
    const err = await rejection(failing.embed(['a']));
    expect(err).toMatchObject({ code: 'SF_ERR_TEXT_BACKEND', statusCode: 424 });
    expect(err.cause).toBe(boom);
    const { createError } = await import('../../src/errors/index.js');
    const draining = new TextEngine(spec, tokenizer, forwardOver({ ...inner, infer: async () => { throw createError('SF_ERR_DRAINING'); } }), { limits: DEFAULT_TEXT_LIMITS, computeType: 'cpu' });
    expect((await rejection(draining.embed(['a']))).statusCode).toBe(503);
  });
});

describe('TextEngine: classifiers and rerankers', () => {
  /** The fake classifier's logits for one sequence of (id, typeId), by hand. */
  function referenceLogits(ids: number[], types: number[], width: number): number[] {
    return Array.from({ length: width }, (_, k) => {
      let sum = 0;
      ids.forEach((id, t) => { for (let c = 0; c < HIDDEN; c++) sum += hiddenOf(id, t, types[t], c) * tableValue(1000 + k, c); });
      return sum / ids.length;
    });
  }

  it('predicts softmax scores over the labels, sorted, and raw logits on request; a pair is one input with type ids', async () => {
    const model = await textModelFor('classify');
    const encoding = await model.tokenizer.encode('i love this');
    const logits = referenceLogits(Array.from(encoding.ids), Array.from(encoding.typeIds), 3);
    const exp = logits.map(Math.exp);
    const expected = CLASSIFIER_LABELS.map((label, i) => ({ label, score: exp[i] / exp.reduce((a, b) => a + b) })).sort((a, b) => b.score - a.score);
    const [scored] = (await model.predict(['i love this'])).values;
    expect(scored.map((s) => s.label)).toEqual(expected.map((s) => s.label));
    scored.forEach((s, i) => expect(s.score).toBeCloseTo(expected[i].score, 5));
    const [raw] = (await model.predict(['i love this'], { rawScores: true })).values;
    expect(raw.find((s) => s.label === 'negative')!.score).toBeCloseTo(logits[0], 5);
    const pair = await model.tokenizer.encodePair('what is it', 'a fox');
    const [pairScores] = (await model.predict([['what is it', 'a fox']], { rawScores: true })).values;
    expect(pairScores.find((s) => s.label === 'neutral')!.score).toBeCloseTo(referenceLogits(Array.from(pair.ids), Array.from(pair.typeIds), 3)[1], 5);
  });

  it('reranks with a sigmoid over each (query, text) logit, in the texts order', async () => {
    const model = await textModelFor('rerank');
    const texts = ['paris is the capital of france', 'how do i bake bread'];
    const answer = await model.rerank('what is the capital of france', texts);
    for (const [i, text] of texts.entries()) {
      const pair = await model.tokenizer.encodePair('what is the capital of france', text);
      const [logit] = referenceLogits(Array.from(pair.ids), Array.from(pair.typeIds), 1);
      expect(answer.values[i]).toBeCloseTo(1 / (1 + Math.exp(-logit)), 5);
    }
    expect(await rejection(model.rerank('q', []))).toMatchObject({ code: 'SF_ERR_TEXT_EMPTY', statusCode: 400 });
  });

  it('refuses an operation the model cannot do with 424, naming what it is not', async () => {
    const embedder = await textModelFor('embed');
    const err = await rejection(embedder.rerank('q', ['a']));
    expect(err).toMatchObject({ code: 'SF_ERR_TEXT_WRONG_TASK', statusCode: 424 });
    expect(err.message).toContain('re-ranker');
    expect((await rejection((await textModelFor('rerank')).embed(['a']))).code).toBe('SF_ERR_TEXT_WRONG_TASK');
  });
});

describe('TextEngine: tokenize, decode, sparse and similarity', () => {
  it('tokenizes with the original substrings and UTF-8 byte offsets, null for special tokens', async () => {
    const model = await textModelFor('embed');
    const text = 'Deep 学习';
    const [tokens] = await model.tokenize([text]);
    expect(tokens[0]).toEqual({ id: CLS, text: '[CLS]', special: true, start: null, stop: null });
    const bytes = Buffer.from(text, 'utf8');
    for (const token of tokens.filter((t) => !t.special)) expect(bytes.subarray(token.start!, token.stop!).toString('utf8')).toBe(token.text);
    expect(tokens.find((t) => t.text === '习')).toMatchObject({ start: 8, stop: 11 });
    expect(await model.decode([tokens.map((t) => t.id)], true)).toEqual([(await model.tokenizer.decode(tokens.map((t) => t.id), true))]);
  });

  it('answers SPLADE rows as the non-zero log(1 + relu) maxima, and cosine similarities of normalised embeddings', async () => {
    const sparse = await textModelFor('sparse');
    const [row] = (await sparse.embedSparse(['fox'])).values;
    const ids = Array.from((await sparse.tokenizer.encode('fox')).ids);
    for (const id of ids) expect(row.find((e) => e.index === id)!.value).toBeCloseTo(Math.log(3), 5);
    expect(row.every((e) => e.value > 0)).toBe(true);
    const embedder = await textModelFor('embed');
    const a = await referenceEmbedding('the fox', 'cls');
    const b = await referenceEmbedding('a dog', 'cls');
    const [score] = (await embedder.similarity('the fox', ['a dog'])).values;
    expect(score).toBeCloseTo(a.reduce((s, x, i) => s + x * b[i], 0), 5);
  });
});

describe('TextEngine: permits in proportion to cost', () => {
  /** An engine over a forward pass that holds every batch until released; 32 tokens a text, so one permit is 128 characters. */
  async function heldEngine(task: 'embed' | 'rerank', limits: Partial<typeof DEFAULT_TEXT_LIMITS>) {
    const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
    const held = heldForward(fakeForward(task, tokenizer.vocabSize));
    const spec = { name: 'held', modelId: 'test', task, pooling: 'cls' as const, maxInputLength: 32, prompts: {}, labels: task === 'rerank' ? ['LABEL_0'] : [], dimensions: HIDDEN };
    return { held, model: new TextEngine(spec, tokenizer, forwardOver(held.model), { limits: { ...DEFAULT_TEXT_LIMITS, ...limits }, computeType: 'cpu' }) };
  }

  it('/tokenize takes a permit an input: 429 while the others are held', async () => {
    const { held, model } = await heldEngine('embed', { maxConcurrentRequests: 3 });
    const running = model.embed(['a', 'b']);
    await expect.poll(held.started).toBe(1);
    expect(await rejection(model.tokenize(['x', 'y']))).toMatchObject({ code: 'SF_ERR_TEXT_OVERLOADED' });
    expect(await model.tokenize(['x'])).toHaveLength(1);
    held.release();
    await running;
    expect(await model.tokenize(['x', 'y', 'z'])).toHaveLength(3);
  });

  it('a long text takes a permit for each model-length of characters; a rerank pays its query once a pair', async () => {
    const { held, model } = await heldEngine('rerank', { maxConcurrentRequests: 8 });
    const running = model.rerank('q', ['a']);
    await expect.poll(held.started).toBe(1);
    // 400 characters: 4 permits a pair (128 characters each), so one pair fits beside the held one, two do not.
    const query = 'word '.repeat(80);
    expect(await rejection(model.rerank(query, ['a', 'b']))).toMatchObject({ code: 'SF_ERR_TEXT_OVERLOADED' });
    const one = model.rerank(query, ['a']);
    expect(await rejection(model.tokenize([query]))).toMatchObject({ code: 'SF_ERR_TEXT_OVERLOADED' });
    held.release();
    await running;
    await expect.poll(held.started).toBe(2);
    held.release();
    expect((await one).values).toHaveLength(1);
    // Alone, a request costlier than every permit still runs: it takes them all.
    const alone = model.rerank('word '.repeat(400), ['a', 'b', 'c']);
    await expect.poll(held.started).toBe(3);
    held.release();
    expect((await alone).values).toHaveLength(3);
  });

  it('/embed_all is sized before the forward pass: over maxAnswerBytes is 413, and a large answer takes its share of the permits', async () => {
    // 'a b c' is 5 tokens: 5 × (8 × 24 + 3) + 3 = 978 bytes at most, all 4 permits of a 1000-byte limit.
    const { held, model } = await heldEngine('embed', { maxConcurrentRequests: 4, maxAnswerBytes: 1000 });
    const tooLarge = await rejection(model.embedAll(['a b c d e']));
    expect(tooLarge).toMatchObject({ code: 'SF_ERR_TEXT_ANSWER_TOO_LARGE', statusCode: 413 });
    expect(tooLarge.message).toMatch(/about 1368 bytes of JSON, over the limit of 1000 bytes \(--max-answer-bytes\)/);
    expect(held.started()).toBe(0);
    const running = model.embed(['x']);
    await expect.poll(held.started).toBe(1);
    expect(await rejection(model.embedAll(['a b c']))).toMatchObject({ code: 'SF_ERR_TEXT_OVERLOADED' });
    held.release();
    await running;
    const alone = model.embedAll(['a b c']);
    await expect.poll(held.started).toBe(2);
    held.release();
    expect((await alone).values[0]).toHaveLength(5);
  });

  it('/embed_all of a model whose width is not known yet is sized once its rows are back, before its answer is built', async () => {
    const model = await textModelFor('embed', { limits: { maxAnswerBytes: 1000 } });
    expect(await rejection(model.embedAll(['a b c d e']))).toMatchObject({ code: 'SF_ERR_TEXT_ANSWER_TOO_LARGE' });
    expect((await model.embedAll(['a b c'])).values[0]).toHaveLength(5);
  });
});
