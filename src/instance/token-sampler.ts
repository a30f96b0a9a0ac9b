import type { SamplingParams, TokenLogprob } from '../spec/sampling-params.js';

/**
 * Picks one sequence's next token from its logits, in the instance, so the HTTP thread never
 * touches a vocabulary-wide row. The order is vLLM v1's sampler (vllm/v1/sample/sampler.py):
 * logits processors (min_tokens' end-of-sequence suppression, logit_bias, the grammar's mask), then
 * penalties (repetition: HF's multiplicative rule over prompt and output tokens; presence and
 * frequency: OpenAI's additive formulas over output tokens), then greedy when temperature is 0, or
 * temperature → min_p → top_k → top_p → a draw. Logprobs follow vLLM's default `raw_logprobs` mode:
 * the log-softmax of the model's own logits, before any processing.
 *
 * A seeded draw takes its uniform number from a counter-based generator keyed by (seed, output
 * index), so the same seed gives the same tokens whatever else is in the batch and after a
 * preemption recomputes the sequence. Hand-written: no maintained npm package offers a
 * counter-based generator (Philox-style) small enough to key per token.
 */

/** vLLM's max_logprobs default: the most alternatives a token may carry. */
export const MAX_LOGPROBS = 20;

export interface SampleInput {
  readonly logits: Float32Array;
  readonly sampling: SamplingParams;
  /** Tokens in the sequence so far: the prompt, then the output. */
  readonly history: readonly number[];
  readonly promptLength: number;
  /** Stop tokens min_tokens holds back: the model's end-of-sequence ids (unless ignore_eos) and stop_token_ids. */
  readonly stopTokenIds: readonly number[];
  /** The grammar's allowed tokens, one bit each (xgrammar's bitmask). */
  readonly allowed?: Int32Array;
}

export interface SampledToken extends TokenLogprob {
  readonly top?: readonly TokenLogprob[];
}

/** murmur3's 32-bit finaliser, mixing each word in turn: a stateless hash, so draw n needs no draws before it. */
function mix(h: number, word: number): number {
  h = Math.imul(h ^ word, 0xcc9e2d51);
  h = (h << 15) | (h >>> 17);
  h = Math.imul(h, 0x1b873593) ^ 0x85ebca6b;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A uniform number in [0, 1) for output index `index` of a request seeded with `seed` (any integer in int64's range). */
export function counterUniform(seed: number, index: number): number {
  const lo = Number(BigInt.asUintN(32, BigInt(Math.trunc(seed))));
  const hi = Number(BigInt.asUintN(32, BigInt(Math.trunc(seed)) >> 32n));
  const a = mix(mix(mix(0x9e3779b9, lo), hi), index >>> 0);
  const b = mix(a, 0x7f4a7c15);
  // 53 bits from two 32-bit words, as a double in [0, 1).
  return ((a >>> 5) * 67108864 + (b >>> 6)) / 9007199254740992;
}

/** log-softmax of a row, in float64 sums. */
export function logSoftmax(logits: Float32Array): Float32Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - max);
  const log = max + Math.log(sum);
  const out = new Float32Array(logits.length);
  for (let i = 0; i < logits.length; i++) out[i] = logits[i]! - log;
  return out;
}

/** The `count` highest entries of `values` among `candidates` (all when absent), highest first (ties: lower id first). */
export function topEntries(values: Float32Array, count: number, candidates?: readonly number[]): number[] {
  const heap: number[] = [];
  const less = (a: number, b: number): boolean => values[a]! < values[b]! || (values[a] === values[b] && a > b);
  const consider = (i: number): void => {
    if (values[i] === -Infinity || Number.isNaN(values[i])) return;
    if (heap.length < count) {
      heap.push(i);
      for (let c = heap.length - 1; c > 0; ) {
        const p = (c - 1) >> 1;
        if (!less(heap[c]!, heap[p]!)) break;
        [heap[c], heap[p]] = [heap[p]!, heap[c]!];
        c = p;
      }
    } else if (count > 0 && less(heap[0]!, i)) {
      heap[0] = i;
      for (let p = 0; ; ) {
        const l = 2 * p + 1;
        const r = l + 1;
        let m = p;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === p) break;
        [heap[m], heap[p]] = [heap[p]!, heap[m]!];
        p = m;
      }
    }
  };
  if (candidates) for (const i of candidates) consider(i);
  else for (let i = 0; i < values.length; i++) consider(i);
  return heap.sort((a, b) => (less(a, b) ? 1 : less(b, a) ? -1 : 0));
}

function isAllowed(mask: Int32Array, id: number): boolean {
  return ((mask[id >>> 5]! >>> (id & 31)) & 1) === 1;
}

/** The processed logits: min_tokens, logit_bias, the grammar mask, then the penalties. */
export function processLogits(input: SampleInput): Float32Array {
  const { sampling, history, promptLength, allowed } = input;
  const logits = Float32Array.from(input.logits);
  const outputIndex = history.length - promptLength;
  if (outputIndex < sampling.minTokens) for (const id of input.stopTokenIds) if (id < logits.length) logits[id] = -Infinity;
  if (sampling.logitBias) for (const [id, bias] of sampling.logitBias) if (id >= 0 && id < logits.length) logits[id]! += bias;
  if (allowed) for (let id = 0; id < logits.length; id++) if (!isAllowed(allowed, id)) logits[id] = -Infinity;
  if (sampling.repetitionPenalty !== 1) {
    // HF's RepetitionPenaltyLogitsProcessor: a seen token's positive logit is divided, a negative one multiplied.
    const seen = new Set(history);
    for (const id of seen) {
      if (id >= logits.length) continue;
      const v = logits[id]!;
      logits[id] = v > 0 ? v / sampling.repetitionPenalty : v * sampling.repetitionPenalty;
    }
  }
  if (sampling.presencePenalty !== 0 || sampling.frequencyPenalty !== 0) {
    // OpenAI: logit − count · frequency_penalty − (count > 0) · presence_penalty, over generated tokens.
    const counts = new Map<number, number>();
    for (let i = promptLength; i < history.length; i++) counts.set(history[i]!, (counts.get(history[i]!) ?? 0) + 1);
    for (const [id, count] of counts) if (id < logits.length) logits[id]! -= count * sampling.frequencyPenalty + sampling.presencePenalty;
  }
  return logits;
}

/** Candidates left after min_p, top_k and top_p over `scaled` (logits already divided by the temperature), with their unnormalised probabilities. */
function candidates(scaled: Float32Array, sampling: SamplingParams): { ids: number[]; weights: number[] } {
  let max = -Infinity;
  for (let i = 0; i < scaled.length; i++) if (scaled[i]! > max) max = scaled[i]!;
  const weight = (i: number): number => Math.exp(scaled[i]! - max);
  // min_p: tokens below min_p × the top token's probability go.
  const floor = sampling.minP > 0 ? sampling.minP : 0;
  let ids: number[];
  if (sampling.topK > 0) {
    ids = topEntries(scaled, sampling.topK);
  } else {
    ids = [];
    for (let i = 0; i < scaled.length; i++) if (scaled[i] !== -Infinity) ids.push(i);
  }
  if (floor > 0) ids = ids.filter((i) => weight(i) >= floor);
  if (sampling.topP < 1) {
    if (sampling.topK <= 0) ids = nucleusCandidates(scaled, ids, max, sampling.topP);
    else ids.sort((a, b) => scaled[b]! - scaled[a]! || a - b);
    const total = ids.reduce((sum, i) => sum + weight(i), 0);
    let cumulative = 0;
    const kept: number[] = [];
    for (const i of ids) {
      kept.push(i);
      cumulative += weight(i);
      if (cumulative >= sampling.topP * total) break;
    }
    ids = kept;
  }
  return { ids, weights: ids.map(weight) };
}

/**
 * The tokens top_p can keep, sorted highest first, without sorting the whole vocabulary: the
 * threshold halves until the tokens above it hold top_p of the mass; every token below it is
 * below all of them, so the cumulative order is the full sort's.
 */
function nucleusCandidates(scaled: Float32Array, ids: readonly number[], max: number, topP: number): number[] {
  let total = 0;
  for (const i of ids) total += Math.exp(scaled[i]! - max);
  for (let shift = 1; ; shift *= 2) {
    const threshold = max - shift;
    const above = ids.filter((i) => scaled[i]! >= threshold);
    let mass = 0;
    for (const i of above) mass += Math.exp(scaled[i]! - max);
    if (mass >= topP * total || above.length === ids.length) return above.sort((a, b) => scaled[b]! - scaled[a]! || a - b);
  }
}

/** The next token of one sequence, with its raw logprob and top alternatives when asked for. */
export function sampleToken(input: SampleInput, uniform: () => number): SampledToken {
  const { sampling } = input;
  const processed = processLogits(input);
  let tokenId: number;
  if (sampling.temperature < 1e-5) {
    tokenId = topEntries(processed, 1)[0] ?? 0;
  } else {
    const scaled = processed.map((v) => v / sampling.temperature);
    const { ids, weights } = candidates(scaled, sampling);
    const total = weights.reduce((a, b) => a + b, 0);
    let target = uniform() * total;
    tokenId = ids.at(-1) ?? 0;
    for (let k = 0; k < ids.length; k++) {
      target -= weights[k]!;
      if (target < 0) {
        tokenId = ids[k]!;
        break;
      }
    }
  }
  if (sampling.logprobs === undefined) return { tokenId, logprob: Number.NaN };
  const raw = logSoftmax(input.logits);
  const count = Math.min(sampling.logprobs, MAX_LOGPROBS);
  const sampled = { tokenId, logprob: raw[tokenId]! };
  return count > 0 ? { ...sampled, top: topEntries(raw, count).map((id) => ({ tokenId: id, logprob: raw[id]! })) } : sampled;
}

/** The uniform source of one draw: the counter-based generator for a seeded request, Math.random otherwise. */
export function uniformFor(sampling: SamplingParams, outputIndex: number): () => number {
  const seed = sampling.seed;
  return seed === undefined ? Math.random : () => counterUniform(seed, outputIndex);
}
