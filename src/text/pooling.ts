import type { PoolingModeName } from '../metadata/records.js';
/**
 * The pooling modes of a text model, and the score functions the text routes apply to what its
 * instance pooled (instance/text-forward-pass.ts pools, where the forward pass runs).
 */

export type PoolingMode = PoolingModeName;

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
