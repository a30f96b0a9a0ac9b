/**
 * FunASR's low frame rate stacking (funasr_onnx/utils/frontend.py, apply_lfr): (m − 1) / 2 copies
 * of the first frame in front, then every n-th frame with the m − 1 after it side by side; a last
 * stack that runs past the end repeats the last frame. ceil(T / n) output frames of m × dim values.
 */
export function stackLowFrameRate(features: Float32Array, dim: number, m: number, n: number): Float32Array {
  const frames = features.length / dim;
  if (frames === 0) return new Float32Array(0);
  const left = Math.floor((m - 1) / 2);
  const padded = frames + left;
  const outFrames = Math.ceil(frames / n);
  const out = new Float32Array(outFrames * m * dim);
  for (let i = 0; i < outFrames; i++) {
    for (let j = 0; j < m; j++) {
      // Index into the left-padded sequence, clamped to its last frame for the short final stack.
      const p = Math.min(i * n + j, padded - 1);
      const source = Math.max(0, p - left);
      out.set(features.subarray(source * dim, (source + 1) * dim), (i * m + j) * dim);
    }
  }
  return out;
}
