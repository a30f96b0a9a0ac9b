import type { PoolingModeName } from '../metadata/records.js';
/**
 * Pooling of a transformer's per-token output into one vector per text, and the score functions
 * the text routes apply, as sentence-transformers' Pooling and SpladePooling modules define them
 * (https://sbert.net/docs/package_reference/sentence_transformer/models.html#pooling). Sums are
 * kept in float64 so long inputs lose no precision before the float32 result.
 */

export type PoolingMode = PoolingModeName;

/**
 * hidden: [rows, length, width] row-major; mask: [rows, length], 1 = real token. One vector of
 * `width` per row. A row without real tokens pools to zeros. 'cls' takes the first real token and
 * 'last-token' the last one, so both work for right and left padding. 'weighted-mean' gives the
 * k-th real token weight k (sentence-transformers weights positions 1..length, which is the same
 * for right padding and keeps left-padded rows equal to unpadded ones). 'splade' is the dense form
 * of {@link spladeRows}.
 */
export function poolRows(
  hidden: Float32Array,
  shape: readonly [number, number, number],
  mask: ArrayLike<number | bigint>,
  mode: PoolingMode,
): Float32Array[] {
  const [rows, length, width] = shape;
  if (hidden.length !== rows * length * width) throw new RangeError(`hidden has ${hidden.length} values, shape [${shape.join(', ')}] needs ${rows * length * width}`);
  if (mask.length !== rows * length) throw new RangeError(`mask has ${mask.length} values, [${rows}, ${length}] needs ${rows * length}`);
  const out: Float32Array[] = [];
  for (let row = 0; row < rows; row++) {
    const real: number[] = [];
    for (let t = 0; t < length; t++) if (Number(mask[row * length + t]) !== 0) real.push(t);
    out.push(real.length === 0 ? new Float32Array(width) : poolRow(hidden, (row * length) * width, width, real, mode));
  }
  return out;
}

function poolRow(hidden: Float32Array, rowStart: number, width: number, real: readonly number[], mode: PoolingMode): Float32Array {
  const at = (t: number, i: number): number => hidden[rowStart + t * width + i]!;
  const vector = new Float32Array(width);
  if (mode === 'cls' || mode === 'last-token') {
    const t = mode === 'cls' ? real[0]! : real[real.length - 1]!;
    vector.set(hidden.subarray(rowStart + t * width, rowStart + (t + 1) * width));
    return vector;
  }
  for (let i = 0; i < width; i++) {
    if (mode === 'max') {
      let best = -Infinity;
      for (const t of real) best = Math.max(best, at(t, i));
      vector[i] = best;
    } else if (mode === 'splade') {
      let best = 0;
      for (const t of real) best = Math.max(best, Math.log1p(Math.max(0, at(t, i))));
      vector[i] = best;
    } else {
      let sum = 0;
      let weights = 0;
      real.forEach((t, k) => {
        const weight = mode === 'weighted-mean' ? k + 1 : 1;
        sum += weight * at(t, i);
        weights += weight;
      });
      vector[i] = sum / weights;
    }
  }
  return vector;
}

/** A new array of unit length; the zero vector stays zero. */
export function l2Normalize(vector: Float32Array): Float32Array {
  let squares = 0;
  for (const v of vector) squares += v * v;
  const norm = Math.sqrt(squares);
  const out = new Float32Array(vector.length);
  if (norm === 0) return out;
  for (let i = 0; i < vector.length; i++) out[i] = vector[i]! / norm;
  return out;
}

/** Written so that neither branch overflows: exp of a large positive number is never taken. */
export function sigmoid(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

/** Shifted by the maximum so large scores do not overflow. */
export function softmax(scores: Float32Array): Float32Array {
  let max = -Infinity;
  for (const s of scores) max = Math.max(max, s);
  const exps = Array.from(scores, (s) => Math.exp(s - max));
  const total = exps.reduce((a, b) => a + b, 0);
  return Float32Array.from(exps, (e) => e / total);
}

/**
 * SPLADE: per vocabulary entry, the max over real tokens of log(1 + relu(logit)); only the
 * non-zero entries, sorted by index (the sparse form TEI's /embed_sparse answers).
 */
export function spladeRows(
  logits: Float32Array,
  shape: readonly [number, number, number],
  mask: ArrayLike<number | bigint>,
): { index: number; value: number }[][] {
  return poolRows(logits, shape, mask, 'splade').map((dense) => {
    const entries: { index: number; value: number }[] = [];
    dense.forEach((value, index) => {
      if (value > 0) entries.push({ index, value });
    });
    return entries;
  });
}
