import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cosine, expectTeiError, norm, post, teiApp, teiAppsByTask, type TeiAppsByTask } from '../helpers/tei-app.js';
import { textModelFor } from '../helpers/text-model-fixture.js';

const softmax = (xs: readonly number[]): number[] => {
  const top = Math.max(...xs);
  const exps = xs.map((x) => Math.exp(x - top));
  const sum = exps.reduce((s, x) => s + x, 0);
  return exps.map((x) => x / sum);
};
const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));
/** `count` words made of `word` and a digit. */
const words = (count: number, word: string): string => Array.from({ length: count }, (_, i) => `${word}${i % 7}`).join(' ');

type Label = { score: number; label: string };
type Token = { id: number; text: string; special: boolean; start: number | null; stop: number | null };

let smallBatchApp: FastifyInstance;

/** One model of each task, each behind its own TEI app. */
let tei: TeiAppsByTask;

beforeAll(async () => {
  tei = await teiAppsByTask();
  smallBatchApp = await teiApp([await textModelFor('embed', { pooling: 'mean', limits: { maxClientBatchSize: 2 } })]);
});

afterAll(async () => {
  await Promise.all([tei.embedApp, tei.classifyApp, tei.rerankApp, tei.sparseApp, smallBatchApp].map((app) => app?.close()));
});

describe('POST /embed', () => {
  it('answers one unit vector per input, the engine’s own embeddings', async () => {
    const res = await post(tei.embedApp, '/embed', { inputs: 'What is Deep Learning?' });
    expect(res.statusCode, res.body).toBe(200);
    const vectors = res.json() as number[][];
    expect(vectors).toHaveLength(1);
    expect(norm(vectors[0])).toBeCloseTo(1, 5);
    const direct = await tei.embedder.embed(['What is Deep Learning?']);
    expect(vectors[0]).toEqual(Array.from(direct.values[0]));
  });

  it('reads a batch mixing texts and token ids, and a bare id list as one input', async () => {
    const [tokens] = (await post(tei.embedApp, '/tokenize', { inputs: 'deep learning' })).json() as Token[][];
    const ids = tokens.map((t) => t.id);
    const res = await post(tei.embedApp, '/embed', { inputs: ['deep learning', ids, 'other words'] });
    expect(res.statusCode, res.body).toBe(200);
    const [fromText, fromIds, other] = res.json() as number[][];
    // The ids of the text with its special tokens are the text's own input: the same vector.
    fromIds.forEach((x, i) => expect(x).toBeCloseTo(fromText[i], 5));
    expect(other).not.toEqual(fromText);
    const single = (await post(tei.embedApp, '/embed', { inputs: ids })).json() as number[][];
    expect(single).toHaveLength(1);
  });

  it('normalize false answers the raw pooled vector, whose direction is the normalised one', async () => {
    const [unit] = (await post(tei.embedApp, '/embed', { inputs: 'a text' })).json() as number[][];
    const [raw] = (await post(tei.embedApp, '/embed', { inputs: 'a text', normalize: false })).json() as number[][];
    expect(norm(raw)).not.toBeCloseTo(1, 3);
    raw.forEach((x, i) => expect(x / norm(raw)).toBeCloseTo(unit[i], 5));
  });

  it('dimensions keeps the first N values, normalised after cutting', async () => {
    const [raw] = (await post(tei.embedApp, '/embed', { inputs: 'a text', normalize: false })).json() as number[][];
    const res = await post(tei.embedApp, '/embed', { inputs: 'a text', dimensions: 3 });
    expect(res.statusCode, res.body).toBe(200);
    const [cut] = res.json() as number[][];
    expect(cut).toHaveLength(3);
    const head = raw.slice(0, 3);
    cut.forEach((x, i) => expect(x).toBeCloseTo(head[i] / norm(head), 5));
  });

  it('refuses "" with 400 Empty, as TEI\'s tokenizer does, alone or in a batch', async () => {
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: '' }), 400, 'Empty');
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: ['a', ''] }), 400, 'Empty');
  });

  it('prompt_name puts the prompt before the text; an unknown one is a 422', async () => {
    const [name, prompt] = Object.entries(tei.embedder.info.prompts)[0] ?? [];
    expect(name, 'the fixture embedder has prompts').toBeDefined();
    const withPrompt = (await post(tei.embedApp, '/embed', { inputs: 'capital of France', prompt_name: name })).json() as number[][];
    const written = (await post(tei.embedApp, '/embed', { inputs: `${prompt}capital of France` })).json() as number[][];
    withPrompt[0].forEach((x, i) => expect(x).toBeCloseTo(written[0][i], 5));
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: 'x', prompt_name: 'no-such-prompt' }), 422, 'Validation');
  });

  it('truncates from the side truncation_direction names, in either case; refuses a long input when truncate is false', async () => {
    // Different words at each end, so the kept ends differ.
    const long = `${words(tei.embedder.info.maxInputLength, 'deep')} ${words(tei.embedder.info.maxInputLength, 'cat')}`;
    const right = await post(tei.embedApp, '/embed', { inputs: long, truncate: true });
    const left = await post(tei.embedApp, '/embed', { inputs: long, truncate: true, truncation_direction: 'Left' });
    const leftLower = await post(tei.embedApp, '/embed', { inputs: long, truncate: true, truncation_direction: 'left' });
    expect(right.statusCode, right.body).toBe(200);
    expect(left.json()).toEqual(leftLower.json());
    expect(left.json()).not.toEqual(right.json());
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: long, truncate: false }), 422, 'Validation', /must have less than/);
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: 'x', truncation_direction: 'LEFT' }), 422, 'Validation', /truncation_direction/);
  });

  it('sets TEI’s compute headers on the answer', async () => {
    const res = await post(tei.embedApp, '/embed', { inputs: ['one', 'two three'] });
    expect(res.headers['x-compute-type']).toBe(tei.embedder.info.computeType);
    expect(Number(res.headers['x-compute-characters'])).toBe('one'.length + 'two three'.length);
    expect(Number(res.headers['x-compute-tokens'])).toBeGreaterThan(0);
    for (const header of ['x-total-time', 'x-tokenization-time', 'x-queue-time', 'x-inference-time']) expect(res.headers[header], header).toMatch(/^\d+$/);
  });

  it('ignores fields TEI does not read, as serde does (the HF client sends encoding_format)', async () => {
    expect((await post(tei.embedApp, '/embed', { inputs: 'x', encoding_format: 'float', user: 'me' })).statusCode).toBe(200);
  });

  it('answers request-shape problems 422 Validation, an empty batch 400 Empty, an over-large one 413', async () => {
    expectTeiError(await post(tei.embedApp, '/embed', {}), 422, 'Validation', /missing field `inputs`/);
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: 5 }), 422, 'Validation');
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: ['a', { text: 'b' }] }), 422, 'Validation', /inputs\[1\]/);
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: 'x', normalize: 'true' }), 422, 'Validation', /normalize/);
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: 'x', dimensions: -2 }), 422, 'Validation', /dimensions/);
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: 'x', dimensions: 100_000 }), 422, 'Validation');
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: 'x', truncate: 'yes' }), 422, 'Validation', /truncate/);
    expectTeiError(await post(tei.embedApp, '/embed', ['x']), 422, 'Validation');
    expectTeiError(await tei.embedApp.inject({ method: 'POST', url: '/embed', headers: { 'content-type': 'application/json' }, payload: '{"inputs": ' }), 422, 'Validation');
    expectTeiError(await post(tei.embedApp, '/embed', { inputs: [] }), 400, 'Empty', /cannot be empty/);
    expectTeiError(await post(smallBatchApp, '/embed', { inputs: ['a', 'b', 'c'] }), 413, 'Validation', /batch size 3 > maximum allowed batch size 2/);
    // The server keeps serving.
    expect((await post(tei.embedApp, '/embed', { inputs: 'x' })).statusCode).toBe(200);
  });
});

describe('POST /embed_all and /embed_sparse', () => {
  it('/embed_all answers one vector per token, as many as /tokenize counts', async () => {
    const res = await post(tei.embedApp, '/embed_all', { inputs: ['deep learning', 'a'] });
    expect(res.statusCode, res.body).toBe(200);
    const tokens = (await post(tei.embedApp, '/tokenize', { inputs: ['deep learning', 'a'] })).json() as Token[][];
    const all = res.json() as number[][][];
    expect(all.map((rows) => rows.length)).toEqual(tokens.map((row) => row.length));
    const width = ((await post(tei.embedApp, '/embed', { inputs: 'a' })).json() as number[][])[0].length;
    for (const rows of all) for (const row of rows) expect(row).toHaveLength(width);
  });

  it('/embed_sparse answers the non-zero vocabulary weights by index', async () => {
    const res = await post(tei.sparseApp, '/embed_sparse', { inputs: ['deep learning', 'neural nets'] });
    expect(res.statusCode, res.body).toBe(200);
    const rows = res.json() as { index: number; value: number }[][];
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.length).toBeGreaterThan(0);
      row.forEach((entry, i) => {
        expect(Object.keys(entry)).toEqual(['index', 'value']);
        expect(entry.value).toBeGreaterThan(0);
        expect(entry.index).toBeLessThan(tei.splade.tokenizer.vocabSize);
        if (i > 0) expect(entry.index).toBeGreaterThan(row[i - 1].index);
      });
    }
    expectTeiError(await post(tei.sparseApp, '/embed_sparse', { inputs: [] }), 400, 'Empty');
  });
});

describe('POST /predict', () => {
  it('a string answers one list of every label, best first, the softmax of the raw scores', async () => {
    const res = await post(tei.classifyApp, '/predict', { inputs: 'I like you' });
    expect(res.statusCode, res.body).toBe(200);
    const labels = res.json() as Label[];
    expect(labels.map((l) => l.label).sort()).toEqual([...tei.classifier.info.labels].sort());
    labels.forEach((l, i) => {
      expect(Object.keys(l)).toEqual(['score', 'label']);
      if (i > 0) expect(l.score).toBeLessThanOrEqual(labels[i - 1].score);
    });
    const raw = (await post(tei.classifyApp, '/predict', { inputs: 'I like you', raw_scores: true })).json() as Label[];
    const order = tei.classifier.info.labels;
    const rawByLabel = order.map((name) => raw.find((l) => l.label === name)!.score);
    const expected = softmax(rawByLabel);
    for (const l of labels) expect(l.score).toBeCloseTo(expected[order.indexOf(l.label)], 5);
  });

  it('["a","b"] is ONE pair; [["a"],["a","b"]] is a batch of two, answered as a list of lists', async () => {
    const pair = await post(tei.classifyApp, '/predict', { inputs: ['I like you', 'I love you'] });
    expect(pair.statusCode, pair.body).toBe(200);
    const pairLabels = pair.json() as Label[];
    expect(pairLabels).toHaveLength(tei.classifier.info.labels.length);
    const alone = (await post(tei.classifyApp, '/predict', { inputs: 'I like you' })).json() as Label[];
    expect(pairLabels).not.toEqual(alone);
    const batch = (await post(tei.classifyApp, '/predict', { inputs: [['I like you'], ['I like you', 'I love you']] })).json() as Label[][];
    expect(batch).toEqual([alone, pairLabels]);
    expect((await post(tei.classifyApp, '/predict', { inputs: ['I like you'] })).json()).toEqual(alone);
  });

  it('refuses other shapes 422 and an over-large batch 413', async () => {
    expectTeiError(await post(tei.classifyApp, '/predict', { inputs: ['a', 'b', 'c'] }), 422, 'Validation', /invalid length 3/);
    expectTeiError(await post(tei.classifyApp, '/predict', { inputs: [] }), 422, 'Validation', /invalid length 0/);
    expectTeiError(await post(tei.classifyApp, '/predict', { inputs: [['a'], 'b'] }), 422, 'Validation');
    expectTeiError(await post(tei.classifyApp, '/predict', { inputs: [['a', 'b', 'c']] }), 422, 'Validation', /invalid length 3/);
    expectTeiError(await post(tei.classifyApp, '/predict', { inputs: 'a', raw_scores: null }), 422, 'Validation', /raw_scores/);
    const many = Array.from({ length: tei.classifier.info.limits.maxClientBatchSize + 1 }, (_, i) => [`text ${i}`]);
    expectTeiError(await post(tei.classifyApp, '/predict', { inputs: many }), 413, 'Validation', /batch size/);
  });
});

describe('POST /rerank', () => {
  const texts = ['Deep learning is a kind of machine learning', 'Paris is in France', 'Cats sleep a lot', 'Neural networks learn'];

  it('answers every text once, best first, the sigmoid of its raw score; text only with return_text', async () => {
    const res = await post(tei.rerankApp, '/rerank', { query: 'What is deep learning?', texts });
    expect(res.statusCode, res.body).toBe(200);
    const ranks = res.json() as { index: number; score: number; text?: string }[];
    expect(ranks.map((r) => r.index).sort()).toEqual([0, 1, 2, 3]);
    ranks.forEach((r, i) => {
      expect(Object.keys(r)).toEqual(['index', 'score']);
      if (i > 0) expect(r.score).toBeLessThanOrEqual(ranks[i - 1].score);
    });
    const raw = (await post(tei.rerankApp, '/rerank', { query: 'What is deep learning?', texts, raw_scores: true })).json() as { index: number; score: number }[];
    for (const r of ranks) expect(r.score).toBeCloseTo(sigmoid(raw.find((x) => x.index === r.index)!.score), 5);
    const withText = (await post(tei.rerankApp, '/rerank', { query: 'What is deep learning?', texts, return_text: true })).json() as { index: number; text: string }[];
    for (const r of withText) expect(Object.keys(r)).toEqual(['index', 'text', 'score']);
    for (const r of withText) expect(r.text).toBe(texts[r.index]);
  });

  it('of equal scores the later text comes first, as TEI’s ascending sort then reverse leaves them', async () => {
    const ranks = (await post(tei.rerankApp, '/rerank', { query: 'q', texts: ['same text', 'other words', 'same text'] })).json() as { index: number; score: number }[];
    const same = ranks.filter((r) => r.index !== 1);
    expect(same[0].score).toBe(same[1].score);
    expect(same.map((r) => r.index)).toEqual([2, 0]);
  });

  it('the scores are the engine’s, one per text in the texts’ order', async () => {
    const direct = await tei.reranker.rerank('What is deep learning?', texts);
    const ranks = (await post(tei.rerankApp, '/rerank', { query: 'What is deep learning?', texts })).json() as { index: number; score: number }[];
    for (const r of ranks) expect(r.score).toBeCloseTo(direct.values[r.index], 6);
  });

  it('empty texts are 400 Empty; a non-reranker answers 424 Backend; a bad shape 422; too many 413', async () => {
    expectTeiError(await post(tei.rerankApp, '/rerank', { query: 'q', texts: [] }), 400, 'Empty', /texts/);
    expectTeiError(await post(tei.embedApp, '/rerank', { query: 'q', texts: ['a'] }), 424, 'Backend', /not a re-ranker/);
    expectTeiError(await post(tei.rerankApp, '/rerank', { texts: ['a'] }), 422, 'Validation', /query/);
    expectTeiError(await post(tei.rerankApp, '/rerank', { query: 'q', texts: 'a' }), 422, 'Validation', /texts/);
    expectTeiError(await post(tei.rerankApp, '/rerank', { query: 'q', texts: ['a'], return_text: 1 }), 422, 'Validation', /return_text/);
    const many = Array.from({ length: tei.reranker.info.limits.maxClientBatchSize + 1 }, (_, i) => `text ${i}`);
    expectTeiError(await post(tei.rerankApp, '/rerank', { query: 'q', texts: many }), 413, 'Validation', /batch size/);
  });
});

describe('POST /similarity', () => {
  it('answers the cosine of the source with each sentence', async () => {
    const sentences = ['Machine learning', 'A recipe for soup'];
    const res = await post(tei.embedApp, '/similarity', { inputs: { source_sentence: 'Deep learning', sentences } });
    expect(res.statusCode, res.body).toBe(200);
    const scores = res.json() as number[];
    const [source, ...others] = (await post(tei.embedApp, '/embed', { inputs: ['Deep learning', ...sentences], normalize: false })).json() as number[][];
    expect(scores).toHaveLength(2);
    scores.forEach((s, i) => expect(s).toBeCloseTo(cosine(source, others[i]), 5));
  });

  it('takes truncation and prompt_name under parameters', async () => {
    const [name] = Object.keys(tei.embedder.info.prompts);
    const res = await post(tei.embedApp, '/similarity', { inputs: { source_sentence: 'a', sentences: ['b'] }, parameters: { truncate: true, truncation_direction: 'left', prompt_name: name } });
    expect(res.statusCode, res.body).toBe(200);
    expectTeiError(await post(tei.embedApp, '/similarity', { inputs: { source_sentence: 'a', sentences: ['b'] }, parameters: { truncation_direction: 'middle' } }), 422, 'Validation');
  });

  it('empty sentences are 400 Empty; a missing source 422; sentences + source over the batch size 413', async () => {
    expectTeiError(await post(tei.embedApp, '/similarity', { inputs: { source_sentence: 'a', sentences: [] } }), 400, 'Empty');
    expectTeiError(await post(tei.embedApp, '/similarity', { inputs: { sentences: ['b'] } }), 422, 'Validation', /source_sentence/);
    expectTeiError(await post(tei.embedApp, '/similarity', { inputs: 'a' }), 422, 'Validation');
    expectTeiError(await post(smallBatchApp, '/similarity', { inputs: { source_sentence: 'a', sentences: ['b', 'c'] } }), 413, 'Validation', /batch size 3 > maximum allowed batch size 2/);
  });
});

describe('POST /tokenize and /decode', () => {
  it('/tokenize answers each token with its text, the UTF-8 byte span of the input it came from', async () => {
    const input = 'Ünïcode and deep learning';
    const res = await post(tei.embedApp, '/tokenize', { inputs: input });
    expect(res.statusCode, res.body).toBe(200);
    const [tokens] = res.json() as Token[][];
    const bytes = Buffer.from(input, 'utf8');
    expect(tokens.some((t) => t.special)).toBe(true);
    for (const t of tokens) {
      expect(Object.keys(t)).toEqual(['id', 'text', 'special', 'start', 'stop']);
      if (t.special) {
        expect([t.start, t.stop]).toEqual([null, null]);
      } else {
        expect(t.text).toBe(bytes.subarray(t.start!, t.stop!).toString('utf8'));
      }
    }
    const plain = (await post(tei.embedApp, '/tokenize', { inputs: input, add_special_tokens: false })).json() as Token[][];
    expect(plain[0].some((t) => t.special)).toBe(false);
    expect(plain[0].map((t) => t.id)).toEqual(tokens.filter((t) => !t.special).map((t) => t.id));
  });

  it('/tokenize reads a batch, and refuses "", token ids and an empty batch', async () => {
    const batch = (await post(tei.embedApp, '/tokenize', { inputs: ['a', 'b'] })).json() as Token[][];
    expect(batch).toHaveLength(2);
    expectTeiError(await post(tei.embedApp, '/tokenize', { inputs: ['a', ''] }), 400, 'Empty');
    expectTeiError(await post(tei.embedApp, '/tokenize', { inputs: [1, 2] }), 422, 'Validation');
    expectTeiError(await post(tei.embedApp, '/tokenize', { inputs: [] }), 400, 'Empty');
  });

  it('/decode turns ids back into the text, with or without special tokens', async () => {
    const [tokens] = (await post(tei.embedApp, '/tokenize', { inputs: 'deep learning' })).json() as Token[][];
    const ids = tokens.map((t) => t.id);
    const res = await post(tei.embedApp, '/decode', { ids });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual(['deep learning']);
    const [withSpecials] = (await post(tei.embedApp, '/decode', { ids, skip_special_tokens: false })).json() as string[];
    for (const t of tokens.filter((x) => x.special)) expect(withSpecials).toContain(tei.embedder.tokenizer.idToToken(t.id));
    expect((await post(tei.embedApp, '/decode', { ids: [ids, ids.slice(0, 2)] })).json()).toHaveLength(2);
    expectTeiError(await post(tei.embedApp, '/decode', { ids: [] }), 400, 'Empty', /`input_ids` cannot be empty/);
  });

  it('/decode refuses what are not token ids', async () => {
    expectTeiError(await post(tei.embedApp, '/decode', { ids: [-1] }), 422, 'Validation', /ids\[0\]/);
    expectTeiError(await post(tei.embedApp, '/decode', { ids: ['a'] }), 422, 'Validation');
    expectTeiError(await post(tei.embedApp, '/decode', { ids: 3 }), 422, 'Validation');
    expectTeiError(await post(tei.embedApp, '/decode', {}), 422, 'Validation', /missing field `ids`/);
    expectTeiError(await post(tei.embedApp, '/decode', { ids: [1.5] }), 422, 'Validation');
  });
});
