/**
 * An independent float64 forward pass of the tiny decoders (test/fixtures/generation), without a
 * KV cache: the whole token sequence at positions 0..n-1 through every layer, as transformers'
 * modeling_qwen3.py / modeling_qwen2.py (and modeling_llama.py: a Qwen2 block without biases)
 * compute it. The only float64 reference: the generation tests compare the ONNX runtime's and the
 * GGUF runtime's (through tiny-decoder.ts's referenceWeights) cached, batched, chunked logits against it.
 */
import type { DecoderLayerWeights, DecoderWeights } from '../fixtures/generation/decoder-weights.js';

type Rows = Float64Array[];

/** x [n][inputs] · W [inputs × outputs] (+ bias). */
function matmul(x: Rows, w: Float32Array, inputs: number, outputs: number, bias?: Float32Array): Rows {
  return x.map((row) => {
    const out = new Float64Array(outputs);
    for (let i = 0; i < inputs; i++) {
      const xi = row[i]!;
      for (let o = 0; o < outputs; o++) out[o]! += xi * w[i * outputs + o]!;
    }
    if (bias) for (let o = 0; o < outputs; o++) out[o]! += bias[o]!;
    return out;
  });
}

function rmsNorm(v: Float64Array, gain: Float32Array, epsilon: number, offset = 0, width = gain.length): void {
  let sum = 0;
  for (let i = 0; i < width; i++) sum += v[offset + i]! ** 2;
  const scale = 1 / Math.sqrt(sum / width + epsilon);
  for (let i = 0; i < width; i++) v[offset + i] = v[offset + i]! * scale * gain[i]!;
}

function rope(v: Float64Array, offset: number, headDim: number, position: number, theta: number): void {
  const half = headDim / 2;
  for (let i = 0; i < half; i++) {
    const angle = position / theta ** ((2 * i) / headDim);
    const a = v[offset + i]!;
    const b = v[offset + half + i]!;
    v[offset + i] = a * Math.cos(angle) - b * Math.sin(angle);
    v[offset + half + i] = b * Math.cos(angle) + a * Math.sin(angle);
  }
}

function layer(x: Rows, l: DecoderLayerWeights, w: DecoderWeights): Rows {
  const { hidden, heads, kvHeads, headDim, intermediate, epsilon, ropeTheta } = w.shape;
  const h = x.map((row) => {
    const copy = Float64Array.from(row);
    rmsNorm(copy, l.inputNorm, epsilon);
    return copy;
  });
  const q = matmul(h, l.q, hidden, heads * headDim, l.qBias);
  const k = matmul(h, l.k, hidden, kvHeads * headDim, l.kBias);
  const v = matmul(h, l.v, hidden, kvHeads * headDim, l.vBias);
  q.forEach((row, position) => {
    for (let head = 0; head < heads; head++) {
      if (l.qNorm) rmsNorm(row, l.qNorm, epsilon, head * headDim, headDim);
      rope(row, head * headDim, headDim, position, ropeTheta);
    }
  });
  k.forEach((row, position) => {
    for (let head = 0; head < kvHeads; head++) {
      if (l.kNorm) rmsNorm(row, l.kNorm, epsilon, head * headDim, headDim);
      rope(row, head * headDim, headDim, position, ropeTheta);
    }
  });
  const groups = heads / kvHeads;
  const context = q.map((qRow, i) => {
    const out = new Float64Array(heads * headDim);
    for (let head = 0; head < heads; head++) {
      const kvHead = Math.floor(head / groups);
      const scores = Array.from({ length: i + 1 }, (_, j) => {
        let dot = 0;
        for (let d = 0; d < headDim; d++) dot += qRow[head * headDim + d]! * k[j]![kvHead * headDim + d]!;
        return dot / Math.sqrt(headDim);
      });
      const max = Math.max(...scores);
      const exps = scores.map((s) => Math.exp(s - max));
      const total = exps.reduce((a, b) => a + b, 0);
      exps.forEach((e, j) => {
        for (let d = 0; d < headDim; d++) out[head * headDim + d]! += (e / total) * v[j]![kvHead * headDim + d]!;
      });
    }
    return out;
  });
  const attended = matmul(context, l.o, heads * headDim, hidden).map((row, i) => row.map((value, c) => value + x[i]![c]!));
  const n = attended.map((row) => {
    const copy = Float64Array.from(row);
    rmsNorm(copy, l.postAttentionNorm, epsilon);
    return copy;
  });
  const gate = matmul(n, l.gate, hidden, intermediate);
  const up = matmul(n, l.up, hidden, intermediate);
  const act = gate.map((row, i) => row.map((g, c) => (g / (1 + Math.exp(-g))) * up[i]![c]!));
  return matmul(act, l.down, intermediate, hidden).map((row, i) => row.map((value, c) => value + attended[i]![c]!));
}

/** Logits [n][vocab] of every position of `tokens`. */
export function referenceLogits(w: DecoderWeights, tokens: readonly number[]): Float64Array[] {
  const { hidden, vocab, epsilon } = w.shape;
  let x: Rows = tokens.map((t) => Float64Array.from(w.embed.subarray(t * hidden, (t + 1) * hidden)));
  for (const l of w.layers) x = layer(x, l, w);
  return x.map((row) => {
    const normed = Float64Array.from(row);
    rmsNorm(normed, w.finalNorm, epsilon);
    const logits = new Float64Array(vocab);
    for (let t = 0; t < vocab; t++) {
      let dot = 0;
      for (let c = 0; c < hidden; c++) dot += normed[c]! * (w.lmHead ? w.lmHead[c * vocab + t]! : w.embed[t * hidden + c]!);
      logits[t] = dot;
    }
    return logits;
  });
}

/** Greedy continuation of `prompt` by the reference: `count` argmax tokens. */
export function referenceGreedy(w: DecoderWeights, prompt: readonly number[], count: number): number[] {
  const tokens = [...prompt];
  for (let i = 0; i < count; i++) {
    const logits = referenceLogits(w, tokens).at(-1)!;
    let best = 0;
    for (let t = 1; t < logits.length; t++) if (logits[t]! > logits[best]!) best = t;
    tokens.push(best);
  }
  return tokens.slice(prompt.length);
}
