/**
 * An independent float64 forward pass of the small text test models (test/fixtures/text), written
 * from the layers' definitions in plain loops: it shares only the weight arrays with the ONNX
 * graphs. Masking here is exact (a query attends only to the keys it may see) where the graphs add
 * a large negative score; pooling, normalisation, sigmoid and softmax are computed from their
 * definitions, not through src/text/pooling.ts, so tests can hold the two against each other.
 */
import type { Attention, BertHeadWeights, BertMaskedLmWeights, BertWeights, LayerNorm, Linear, Qwen3Weights } from '../fixtures/text/text-model-weights.js';

/** Token ids of a padded batch, [rows][positions]; mask 1 = real token. */
export interface TokenBatch {
  readonly ids: readonly (readonly number[])[];
  readonly mask: readonly (readonly number[])[];
  readonly typeIds?: readonly (readonly number[])[];
}

/** Hidden states [rows][positions][width]; null at a position whose query may see no key (left padding under a causal mask). */
export type ReferenceHidden = (number[] | null)[][];

export type ReferencePooling = 'cls' | 'mean' | 'max' | 'last-token' | 'weighted-mean';

type Vector = number[];

function row(table: Float32Array, index: number, width: number): Vector {
  if (index < 0 || (index + 1) * width > table.length) throw new RangeError(`row ${index} is outside the table`);
  return Array.from(table.subarray(index * width, (index + 1) * width));
}

function applyLinear(x: Vector, layer: Linear): Vector {
  const out: Vector = [];
  for (let j = 0; j < layer.outputs; j++) {
    let sum = layer.bias?.[j] ?? 0;
    for (let i = 0; i < layer.inputs; i++) sum += x[i]! * layer.weight[i * layer.outputs + j]!;
    out.push(sum);
  }
  return out;
}

const add = (a: Vector, b: Vector): Vector => a.map((v, i) => v + b[i]!);

function layerNorm(x: Vector, norm: LayerNorm, epsilon: number): Vector {
  const mean = x.reduce((s, v) => s + v, 0) / x.length;
  const variance = x.reduce((s, v) => s + (v - mean) ** 2, 0) / x.length;
  return x.map((v, i) => ((v - mean) / Math.sqrt(variance + epsilon)) * norm.scale[i]! + norm.bias[i]!);
}

function rmsNorm(x: Vector, gain: Float32Array, epsilon: number): Vector {
  const rms = Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length + epsilon);
  return x.map((v, i) => (v / rms) * gain[i]!);
}

/**
 * erf(x) = 2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1)): every term positive, so float64 keeps
 * full precision (JavaScript has no Math.erf).
 */
export function erf(x: number): number {
  if (Math.abs(x) > 6) return Math.sign(x);
  let term = x;
  let sum = x;
  for (let n = 1; n < 500 && Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
    term *= (2 * x * x) / (2 * n + 1);
    sum += term;
  }
  return (2 / Math.sqrt(Math.PI)) * Math.exp(-x * x) * sum;
}

const gelu = (v: number): number => 0.5 * v * (1 + erf(v / Math.SQRT2));
const silu = (v: number): number => v / (1 + Math.exp(-v));

/** One head; query t sees key s where sees(t, s); null where it sees none. */
function attend(x: readonly (Vector | null)[], w: Attention, sees: (t: number, s: number) => boolean): (Vector | null)[] {
  const q = x.map((v) => (v === null ? null : applyLinear(v, w.q)));
  const k = x.map((v) => (v === null ? null : applyLinear(v, w.k)));
  const v = x.map((value) => (value === null ? null : applyLinear(value, w.v)));
  const scale = 1 / Math.sqrt(w.q.outputs);
  return q.map((query, t) => {
    const keys = x.map((_, s) => s).filter((s) => sees(t, s) && k[s] !== null);
    if (query === null || keys.length === 0) return null;
    const scores = keys.map((s) => query.reduce((sum, qi, i) => sum + qi * k[s]![i]!, 0) * scale);
    const top = Math.max(...scores);
    const weights = scores.map((s) => Math.exp(s - top));
    const total = weights.reduce((a, b) => a + b, 0);
    const context = new Array<number>(w.v.outputs).fill(0);
    keys.forEach((s, n) => v[s]!.forEach((value, i) => (context[i]! += (weights[n]! / total) * value)));
    return applyLinear(context, w.o);
  });
}

/** BertModel's last_hidden_state: position ids 0.., keys limited to real tokens. */
export function referenceBertHidden(w: BertWeights, batch: TokenBatch): ReferenceHidden {
  return batch.ids.map((ids, b) => {
    const mask = batch.mask[b]!;
    const x = ids.map((id, t) => layerNorm(
      add(add(row(w.word, id, w.hidden), row(w.position, t, w.hidden)), row(w.tokenType, batch.typeIds?.[b]?.[t] ?? 0, w.hidden)),
      w.embeddingNorm, w.epsilon,
    ));
    const attended = attend(x, w.attention, (_t, s) => mask[s] === 1);
    return x.map((xt, t) => {
      const a = attended[t];
      if (a === null || a === undefined) return null;
      const h = layerNorm(add(xt, a), w.attentionNorm, w.epsilon);
      return layerNorm(add(h, applyLinear(applyLinear(h, w.intermediate).map(gelu), w.output)), w.outputNorm, w.epsilon);
    });
  });
}

/** BertForSequenceClassification's logits: the first position through tanh(pooler) and the classifier. */
export function referenceBertLogits(weights: { encoder: BertWeights; head: BertHeadWeights }, batch: TokenBatch): number[][] {
  return referenceBertHidden(weights.encoder, batch).map((hidden) => {
    const cls = hidden[0];
    if (cls === null || cls === undefined) throw new Error('the first position must be a real token');
    return applyLinear(applyLinear(cls, weights.head.pooler).map(Math.tanh), weights.head.classifier);
  });
}

/** BertForMaskedLM's logits [rows][positions][vocab]. */
export function referenceBertMaskedLmLogits(weights: { encoder: BertWeights; head: BertMaskedLmWeights }, batch: TokenBatch): ReferenceHidden {
  const { head, encoder } = weights;
  return referenceBertHidden(encoder, batch).map((hidden) => hidden.map((h) =>
    h === null ? null : applyLinear(layerNorm(applyLinear(h, head.transform).map(gelu), head.transformNorm, encoder.epsilon), head.decoder)));
}

/** SPLADE from its definition: per vocabulary entry, max over real tokens of log(1 + max(0, logit)); the non-zero ones by index. */
export function referenceSplade(logits: readonly (Vector | null)[], mask: readonly number[]): { index: number; value: number }[] {
  const real = logits.filter((_, t) => mask[t] === 1) as Vector[];
  const entries: { index: number; value: number }[] = [];
  real[0]!.forEach((_, index) => {
    const value = Math.max(...real.map((v) => Math.log(1 + Math.max(0, v[index]!))));
    if (value > 0) entries.push({ index, value });
  });
  return entries;
}

/** The Qwen3-style decoder's last_hidden_state: query t sees real keys s ≤ t. */
export function referenceQwen3Hidden(w: Qwen3Weights, batch: TokenBatch): ReferenceHidden {
  return batch.ids.map((ids, b) => {
    const mask = batch.mask[b]!;
    const x = ids.map((id) => row(w.embed, id, w.hidden));
    const attended = attend(x.map((v) => rmsNorm(v, w.inputNorm, w.epsilon)), w.attention, (t, s) => s <= t && mask[s] === 1);
    return x.map((xt, t) => {
      const a = attended[t];
      if (a === null || a === undefined) return null;
      const h = add(xt, a);
      const n = rmsNorm(h, w.postAttentionNorm, w.epsilon);
      const gate = applyLinear(n, w.gate).map(silu);
      const up = applyLinear(n, w.up);
      return rmsNorm(add(h, applyLinear(gate.map((g, i) => g * up[i]!), w.down)), w.finalNorm, w.epsilon);
    });
  });
}

/** sentence-transformers pooling of one row over its real tokens; weighted-mean weighs the k-th real token by k. */
export function referencePool(hidden: readonly (Vector | null)[], mask: readonly number[], mode: ReferencePooling): Vector {
  const real = mask.flatMap((m, t) => (m === 1 ? [t] : []));
  const vectors = real.map((t) => {
    const v = hidden[t];
    if (v === null || v === undefined) throw new Error(`real token ${t} has no hidden state`);
    return v;
  });
  const width = vectors[0]!.length;
  const column = (i: number): number[] => vectors.map((v) => v[i]!);
  switch (mode) {
    case 'cls': return vectors[0]!;
    case 'last-token': return vectors[vectors.length - 1]!;
    case 'max': return Array.from({ length: width }, (_, i) => Math.max(...column(i)));
    case 'mean': return Array.from({ length: width }, (_, i) => column(i).reduce((a, b) => a + b, 0) / vectors.length);
    case 'weighted-mean': {
      const total = (vectors.length * (vectors.length + 1)) / 2;
      return Array.from({ length: width }, (_, i) => column(i).reduce((s, v, k) => s + (k + 1) * v, 0) / total);
    }
  }
}

export function referenceNormalize(v: readonly number[]): number[] {
  const norm = Math.hypot(...v);
  return norm === 0 ? [...v] : v.map((x) => x / norm);
}

export const referenceSigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

export function referenceSoftmax(scores: readonly number[]): number[] {
  const exps = scores.map((s) => Math.exp(s));
  const total = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / total);
}
