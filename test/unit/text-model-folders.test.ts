import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTextModelFolder } from '../../src/text/model-folder.js';
import { poolRows, spladeRows } from '../../src/instance/text-forward-pass.js';
import { l2Normalize, sigmoid, softmax, type PoolingMode } from '../../src/text/pooling.js';
import {
  CLASSIFIER_LABELS, QWEN3_QUERY_PROMPT, QWEN3_VOCAB, writeBertClassifier, writeBertCrossEncoder, writeBertEncoder, writeBertSplade, writeQwen3Decoder,
} from '../fixtures/text/text-model-folders.js';
import {
  referenceBertHidden, referenceBertLogits, referenceBertMaskedLmLogits, referenceNormalize, referencePool, referenceQwen3Hidden, referenceSigmoid,
  referenceSoftmax, referenceSplade,
  type ReferenceHidden, type TokenBatch,
} from '../helpers/text-reference.js';

const TOLERANCE = 1e-4;
let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'serve-fn-text-models-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Token id sequences of mixed lengths; BERT ones start with [CLS]=2 and end with [SEP]=3. */
const BERT_TEXTS = [[2, 40, 41, 42, 43, 44, 3], [2, 100, 3], [2, 300, 301, 7, 471, 3], [2, 3]];
/** A pair: [CLS] a [SEP] b [SEP] with token type 1 on the second text. */
const BERT_PAIR = { ids: [2, 50, 51, 3, 60, 61, 62, 3], types: [0, 0, 0, 0, 1, 1, 1, 1] };
/** Qwen3 ids spread over the table, the last one an added token (<|im_end|>). */
const QWEN3_TEXTS = [[9707, 1879, 151645], [14990, 0, 151642, 42, 7, 151645], [151645]];
const QWEN3_PAD = 151643;

function pad(sequences: readonly (readonly number[])[], side: 'left' | 'right', padId: number, types?: readonly (readonly number[])[]): TokenBatch {
  const length = Math.max(...sequences.map((s) => s.length));
  const place = <T>(values: readonly T[], filler: T): T[] => {
    const fill = new Array<T>(length - values.length).fill(filler);
    return side === 'right' ? [...values, ...fill] : [...fill, ...values];
  };
  return {
    ids: sequences.map((s) => place(s, padId)),
    mask: sequences.map((s) => place(s.map(() => 1), 0)),
    typeIds: sequences.map((s, i) => place(types?.[i] ?? s.map(() => 0), 0)),
  };
}

async function run(dir: string, batch: TokenBatch, withTypes: boolean): Promise<ort.Tensor> {
  const session = await ort.InferenceSession.create(join(dir, 'onnx/model.onnx'), { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const dims = [batch.ids.length, batch.ids[0]!.length];
  const tensor = (rows: readonly (readonly number[])[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(rows.flat(), BigInt), dims);
  const feeds: Record<string, ort.Tensor> = { input_ids: tensor(batch.ids), attention_mask: tensor(batch.mask) };
  if (withTypes) feeds.token_type_ids = tensor(batch.typeIds!);
  try {
    const outputs = await session.run(feeds);
    return Object.values(outputs)[0]!;
  } finally {
    await session.release();
  }
}

function expectClose(actual: ArrayLike<number>, expected: readonly number[]): void {
  expect(actual.length).toBe(expected.length);
  expected.forEach((value, i) => expect(Math.abs(actual[i]! - value), `element ${i}: ${actual[i]} vs ${value}`).toBeLessThan(TOLERANCE));
}

/** Every position the reference defines (all but left padding under the causal mask) matches; returns how many were compared. */
function expectHiddenClose(output: ort.Tensor, expected: ReferenceHidden): number {
  const [rows, length, width] = output.dims as [number, number, number];
  const data = output.data as Float32Array;
  let compared = 0;
  for (let b = 0; b < rows; b++) {
    for (let t = 0; t < length; t++) {
      const vector = expected[b]![t];
      if (vector === null || vector === undefined) continue;
      expectClose(data.subarray((b * length + t) * width, (b * length + t + 1) * width), vector);
      compared++;
    }
  }
  return compared;
}

const pooled = (output: ort.Tensor, batch: TokenBatch, mode: PoolingMode): Float32Array[] =>
  poolRows(output.data as Float32Array, output.dims as [number, number, number], batch.mask.flat(), mode);

describe('writeBertEncoder', () => {
  let dir: string;
  let weights: ReturnType<typeof writeBertEncoder>;
  const batch = pad(BERT_TEXTS, 'right', 0);
  beforeAll(() => {
    dir = join(root, 'bert-encoder');
    weights = writeBertEncoder(dir, { pooling: 'mean', normalize: true, maxSeqLength: 48 });
  });

  it('writes a folder readTextModelFolder reads as a normalised mean-pooling embedder', () => {
    expect(readTextModelFolder(dir)).toMatchObject({ task: 'embed', pooling: 'mean', maxInputLength: 48, hiddenSize: 16 });
  });

  it('computes last_hidden_state at every position of a right-padded batch as the reference does', async () => {
    const output = await run(dir, batch, true);
    expect(output.dims).toEqual([4, 7, 16]);
    expect(expectHiddenClose(output, referenceBertHidden(weights, batch))).toBe(4 * 7);
  });

  it.each(['cls', 'mean', 'max', 'weighted-mean'] as const)('pools with %s and normalises as the reference does', async (mode) => {
    const output = await run(dir, batch, true);
    const reference = referenceBertHidden(weights, batch);
    pooled(output, batch, mode).forEach((vector, b) => {
      const expected = referencePool(reference[b]!, batch.mask[b]!, mode);
      expectClose(vector, expected);
      expectClose(l2Normalize(vector), referenceNormalize(expected));
    });
  });

  it('gives a row the same pooled vector padded in a batch as alone', async () => {
    const padded = pooled(await run(dir, batch, true), batch, 'mean');
    for (const [b, text] of BERT_TEXTS.entries()) {
      const alone = pad([text], 'right', 0);
      expectClose(padded[b]!, Array.from(pooled(await run(dir, alone, true), alone, 'mean')[0]!));
    }
  });

  it('would change the result if padding were attended to (the masking test can fail)', async () => {
    const unmasked = { ...batch, mask: batch.mask.map((m) => m.map(() => 1)) };
    const wrong = pooled(await run(dir, unmasked, true), batch, 'mean')[1]!;
    const right = pooled(await run(dir, batch, true), batch, 'mean')[1]!;
    expect(Math.max(...Array.from(wrong, (v, i) => Math.abs(v - right[i]!)))).toBeGreaterThan(1e-2);
  });
});

describe('writeBertCrossEncoder', () => {
  it('is a one-label re-ranker whose logits and sigmoid scores match the reference, pair types included', async () => {
    const dir = join(root, 'bert-cross-encoder');
    const weights = writeBertCrossEncoder(dir);
    expect(readTextModelFolder(dir)).toMatchObject({ task: 'rerank', pooling: 'cls', labels: ['LABEL_0'], maxInputLength: 128 });
    const batch = pad([BERT_PAIR.ids, BERT_TEXTS[0]!, BERT_TEXTS[1]!], 'right', 0, [BERT_PAIR.types]);
    const output = await run(dir, batch, true);
    expect(output.dims).toEqual([3, 1]);
    const expected = referenceBertLogits(weights, batch);
    expectClose(output.data as Float32Array, expected.flat());
    expectClose(Array.from(output.data as Float32Array, sigmoid), expected.map(([logit]) => referenceSigmoid(logit!)));
    const untyped = await run(dir, { ...batch, typeIds: batch.ids.map((ids) => ids.map(() => 0)) }, true);
    expect(Math.abs((untyped.data as Float32Array)[0]! - (output.data as Float32Array)[0]!)).toBeGreaterThan(1e-3);
  });
});

describe('writeBertClassifier', () => {
  it('is a three-label classifier whose logits and softmax match the reference', async () => {
    const dir = join(root, 'bert-classifier');
    const weights = writeBertClassifier(dir);
    expect(readTextModelFolder(dir)).toMatchObject({ task: 'classify', labels: [...CLASSIFIER_LABELS] });
    const batch = pad(BERT_TEXTS, 'right', 0);
    const output = await run(dir, batch, true);
    expect(output.dims).toEqual([4, 3]);
    const data = output.data as Float32Array;
    referenceBertLogits(weights, batch).forEach((logits, b) => {
      const row = data.subarray(b * 3, b * 3 + 3);
      expectClose(row, logits);
      expectClose(softmax(row), referenceSoftmax(logits));
    });
  });
});

describe('writeBertSplade', () => {
  it('is a sparse MaskedLM whose logits and SPLADE entries match the reference, padded or alone', async () => {
    const dir = join(root, 'bert-splade');
    const weights = writeBertSplade(dir);
    expect(readTextModelFolder(dir)).toMatchObject({ task: 'sparse', pooling: 'splade' });
    const batch = pad(BERT_TEXTS, 'right', 0);
    const output = await run(dir, batch, true);
    expect(output.dims).toEqual([4, 7, 512]);
    const logits = referenceBertMaskedLmLogits(weights, batch);
    expect(expectHiddenClose(output, logits)).toBe(4 * 7);
    // Equal index sets are stable: with these weights no entry's max logit lies within 7e-4 of zero, ORT's error is ~1e-7.
    const sparse = spladeRows(output.data as Float32Array, output.dims as [number, number, number], batch.mask.flat());
    for (const [b, text] of BERT_TEXTS.entries()) {
      const expected = referenceSplade(logits[b]!, batch.mask[b]!);
      expect(sparse[b]!.map((e) => e.index)).toEqual(expected.map((e) => e.index));
      expectClose(sparse[b]!.map((e) => e.value), expected.map((e) => e.value));
      const alone = pad([text], 'right', 0);
      const single = await run(dir, alone, true);
      expect(spladeRows(single.data as Float32Array, single.dims as [number, number, number], alone.mask.flat())[0]!.map((e) => e.index)).toEqual(expected.map((e) => e.index));
    }
  });
});

describe('writeQwen3Decoder', () => {
  let dir: string;
  let weights: ReturnType<typeof writeQwen3Decoder>;
  const batch = pad(QWEN3_TEXTS, 'left', QWEN3_PAD);
  beforeAll(() => {
    dir = join(root, 'qwen3-embedding');
    weights = writeQwen3Decoder(dir);
  });

  it('writes a last-token embedder with Normalize and the Qwen3-Embedding prompts', () => {
    expect(weights.vocab).toBe(QWEN3_VOCAB);
    expect(readTextModelFolder(dir)).toMatchObject({
      task: 'embed', pooling: 'last-token', maxInputLength: 512,
      prompts: { query: QWEN3_QUERY_PROMPT, document: '' },
    });
  });

  it('computes last_hidden_state of a left-padded batch under the causal and padding mask as the reference does', async () => {
    const output = await run(dir, batch, false);
    expect(output.dims).toEqual([3, 6, 8]);
    // Left padding before a row's first real token sees no key; every real token is compared.
    expect(expectHiddenClose(output, referenceQwen3Hidden(weights, batch))).toBe(3 + 6 + 1);
  });

  it('pools the last token and normalises as the reference does, padded or alone', async () => {
    const output = await run(dir, batch, false);
    const reference = referenceQwen3Hidden(weights, batch);
    const vectors = pooled(output, batch, 'last-token').map(l2Normalize);
    for (const [b, text] of QWEN3_TEXTS.entries()) {
      expectClose(vectors[b]!, referenceNormalize(referencePool(reference[b]!, batch.mask[b]!, 'last-token')));
      const alone = pad([text], 'left', QWEN3_PAD);
      expectClose(vectors[b]!, Array.from(l2Normalize(pooled(await run(dir, alone, false), alone, 'last-token')[0]!)));
    }
  });
});
