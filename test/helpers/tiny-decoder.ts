/**
 * Tiny Llama- and Qwen3-architecture decoders with fixed random weights, written as GGUF the way
 * llama.cpp's convert_hf_to_gguf.py writes a Hugging Face checkpoint, checked against the float64
 * reference forward pass the ONNX decoder tests use (test/helpers/decoder-reference.ts).
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import type { DecoderWeights } from '../fixtures/generation/decoder-weights.js';
import { referenceLogits as decoderReferenceLogits } from './decoder-reference.js';
import { encodeGguf, type GgufTensor, type GgufValue } from './gguf-writer.js';

export type TinyArch = 'llama' | 'qwen3';

export interface TinyDecoderConfig {
  readonly arch: TinyArch;
  readonly hidden: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  /** Qwen3's trap: head_dim need not be hidden / heads. */
  readonly headDim: number;
  readonly intermediate: number;
  readonly ropeTheta: number;
  readonly eps: number;
  readonly contextLength: number;
  readonly tiedEmbeddings: boolean;
  /** Extra vocabulary entries beyond the byte-level tokens, merges and specials (benchmark-sized vocabularies). */
  readonly extraTokens?: number;
}

export const TINY_LLAMA: TinyDecoderConfig = {
  arch: 'llama', hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 16, intermediate: 128,
  ropeTheta: 10_000, eps: 1e-5, contextLength: 512, tiedEmbeddings: false,
};

export const TINY_QWEN3: TinyDecoderConfig = {
  arch: 'qwen3', hidden: 64, layers: 2, heads: 4, kvHeads: 2, headDim: 32, intermediate: 128,
  ropeTheta: 1_000_000, eps: 1e-6, contextLength: 512, tiedEmbeddings: true,
};

/** A ChatML template (the shape of Qwen's), short enough to read in a test. */
export const TINY_CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export const SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

/** GPT-2's bytes_to_unicode: every byte as a printable character (byte-level BPE's alphabet). */
export function byteLevelAlphabet(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) out.push(String.fromCharCode(printable(b) ? b : next++));
  return out;
}

const MERGES = ['h e', 'l l', 'he ll', 'o r', 'Ġ w', 'Ġw or', 'l d', 'Ġ a', 'Ġ t', 'Ġt r', 'u e'];

export interface TinyVocab {
  readonly tokens: string[];
  readonly tokenTypes: number[];
  readonly merges: string[];
  readonly eosId: number;
  readonly imEndId: number;
}

export function tinyVocab(extraTokens = 0): TinyVocab {
  const tokens = byteLevelAlphabet();
  for (const m of MERGES) tokens.push(m.replace(' ', ''));
  for (let i = 0; i < extraTokens; i++) tokens.push(`▁extra${i}`);
  const tokenTypes = tokens.map(() => 1);
  const eosId = tokens.length;
  for (const s of SPECIAL_TOKENS) {
    tokens.push(s);
    tokenTypes.push(3); // LLAMA_TOKEN_TYPE_CONTROL
  }
  return { tokens, tokenTypes, merges: [...MERGES], eosId, imEndId: eosId + 2 };
}

/** Weights in Hugging Face's layout: a Linear's weight is [out][in], row-major. */
export interface TinyWeights {
  readonly config: TinyDecoderConfig;
  readonly vocab: TinyVocab;
  readonly vocabSize: number;
  readonly embed: Float32Array;
  readonly finalNorm: Float32Array;
  readonly lmHead: Float32Array;
  readonly layers: readonly {
    readonly inputNorm: Float32Array; readonly postNorm: Float32Array;
    readonly q: Float32Array; readonly k: Float32Array; readonly v: Float32Array; readonly o: Float32Array;
    readonly qNorm?: Float32Array; readonly kNorm?: Float32Array;
    readonly gate: Float32Array; readonly up: Float32Array; readonly down: Float32Array;
  }[];
}

/** mulberry32: a seeded PRNG so every run writes the same weights. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function tinyWeights(config: TinyDecoderConfig, seed = 1234): TinyWeights {
  const rand = seededRandom(seed);
  const uniform = (n: number, scale: number) => Float32Array.from({ length: n }, () => (rand() * 2 - 1) * scale);
  const norm = (n: number) => Float32Array.from({ length: n }, () => 1 + (rand() * 2 - 1) * 0.2);
  const vocab = tinyVocab(config.extraTokens);
  const V = vocab.tokens.length;
  const { hidden: H, headDim: D, heads, kvHeads, intermediate: F } = config;
  const w = (inDim: number) => 1 / Math.sqrt(inDim);
  const embed = uniform(V * H, 0.2);
  return {
    config, vocab, vocabSize: V, embed,
    finalNorm: norm(H),
    lmHead: config.tiedEmbeddings ? embed : uniform(V * H, w(H)),
    layers: Array.from({ length: config.layers }, () => ({
      inputNorm: norm(H), postNorm: norm(H),
      q: uniform(heads * D * H, w(H)), k: uniform(kvHeads * D * H, w(H)), v: uniform(kvHeads * D * H, w(H)),
      o: uniform(H * heads * D, w(heads * D)),
      ...(config.arch === 'qwen3' ? { qNorm: norm(D), kNorm: norm(D) } : {}),
      gate: uniform(F * H, w(H)), up: uniform(F * H, w(H)), down: uniform(H * F, w(F)),
    })),
  };
}

/**
 * convert_hf_to_gguf.py's LlamaModel.permute: llama.cpp's `llama` architecture rotates adjacent
 * pairs (rope type NORM) where Hugging Face rotates halves, so q/k rows are interleaved per head.
 */
function permuteForNormRope(weight: Float32Array, heads: number, headDim: number, inDim: number): Float32Array {
  const out = new Float32Array(weight.length);
  const half = headDim / 2;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (const [dst, src] of [[2 * i, i], [2 * i + 1, half + i]] as const) {
        out.set(weight.subarray((h * headDim + src) * inDim, (h * headDim + src + 1) * inDim), (h * headDim + dst) * inDim);
      }
    }
  }
  return out;
}

/** The GGUF bytes for these weights: llama.cpp's tensor names and metadata keys (src/llama-arch.cpp). */
export function tinyGguf(weights: TinyWeights, name = `tiny-${weights.config.arch}`): Buffer {
  const c = weights.config;
  const arch = c.arch;
  const V = weights.vocabSize;
  const meta = new Map<string, GgufValue>([
    ['general.architecture', { type: 'string', value: arch }],
    ['general.name', { type: 'string', value: name }],
    [`${arch}.context_length`, { type: 'u32', value: c.contextLength }],
    [`${arch}.embedding_length`, { type: 'u32', value: c.hidden }],
    [`${arch}.block_count`, { type: 'u32', value: c.layers }],
    [`${arch}.feed_forward_length`, { type: 'u32', value: c.intermediate }],
    [`${arch}.attention.head_count`, { type: 'u32', value: c.heads }],
    [`${arch}.attention.head_count_kv`, { type: 'u32', value: c.kvHeads }],
    [`${arch}.attention.key_length`, { type: 'u32', value: c.headDim }],
    [`${arch}.attention.value_length`, { type: 'u32', value: c.headDim }],
    [`${arch}.rope.dimension_count`, { type: 'u32', value: c.headDim }],
    [`${arch}.rope.freq_base`, { type: 'f32', value: c.ropeTheta }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { type: 'f32', value: c.eps }],
    [`${arch}.vocab_size`, { type: 'u32', value: V }],
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: arch === 'qwen3' ? 'qwen2' : 'llama-bpe' }],
    ['tokenizer.ggml.tokens', { type: 'string[]', value: weights.vocab.tokens }],
    ['tokenizer.ggml.token_type', { type: 'i32[]', value: weights.vocab.tokenTypes }],
    ['tokenizer.ggml.merges', { type: 'string[]', value: weights.vocab.merges }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: weights.vocab.eosId }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: weights.vocab.imEndId }],
    ['tokenizer.ggml.padding_token_id', { type: 'u32', value: weights.vocab.eosId }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
    ['tokenizer.chat_template', { type: 'string', value: TINY_CHAT_TEMPLATE }],
  ]);
  const H = c.hidden;
  const tensors: GgufTensor[] = [{ name: 'token_embd.weight', dims: [H, V], data: weights.embed }];
  weights.layers.forEach((l, i) => {
    const blk = (n: string, dims: number[], data: Float32Array) => tensors.push({ name: `blk.${i}.${n}.weight`, dims, data });
    const q = arch === 'llama' ? permuteForNormRope(l.q, c.heads, c.headDim, H) : l.q;
    const k = arch === 'llama' ? permuteForNormRope(l.k, c.kvHeads, c.headDim, H) : l.k;
    blk('attn_norm', [H], l.inputNorm);
    blk('attn_q', [H, c.heads * c.headDim], q);
    blk('attn_k', [H, c.kvHeads * c.headDim], k);
    blk('attn_v', [H, c.kvHeads * c.headDim], l.v);
    blk('attn_output', [c.heads * c.headDim, H], l.o);
    if (l.qNorm && l.kNorm) {
      blk('attn_q_norm', [c.headDim], l.qNorm);
      blk('attn_k_norm', [c.headDim], l.kNorm);
    }
    blk('ffn_norm', [H], l.postNorm);
    blk('ffn_gate', [H, c.intermediate], l.gate);
    blk('ffn_up', [H, c.intermediate], l.up);
    blk('ffn_down', [c.intermediate, H], l.down);
  });
  tensors.push({ name: 'output_norm.weight', dims: [H], data: weights.finalNorm });
  if (!c.tiedEmbeddings) tensors.push({ name: 'output.weight', dims: [H, V], data: weights.lmHead });
  return encodeGguf(meta, tensors);
}

/** Writes `<dir>/<name>.gguf` and returns its path. */
export function writeTinyGguf(dir: string, weights: TinyWeights, name = `tiny-${weights.config.arch}`): string {
  const path = join(dir, `${name}.gguf`);
  writeFileSync(path, tinyGguf(weights, name));
  return path;
}

/** [out][in] (Hugging Face's Linear) → [in][out] (the reference's x · W). */
function transpose(w: Float32Array, outDim: number, inDim: number): Float32Array {
  const t = new Float32Array(w.length);
  for (let o = 0; o < outDim; o++) for (let i = 0; i < inDim; i++) t[i * outDim + o] = w[o * inDim + i]!;
  return t;
}

const asReference = new WeakMap<TinyWeights, DecoderWeights>();

/**
 * These weights in the layout of the one float64 reference (test/helpers/decoder-reference.ts), which
 * the ONNX decoder tests use too: a Llama block is a Qwen2 block without the q/k/v biases.
 */
export function referenceWeights(weights: TinyWeights): DecoderWeights {
  let converted = asReference.get(weights);
  if (converted) return converted;
  const c = weights.config;
  const { hidden: H, headDim: D, heads, kvHeads, intermediate: F } = c;
  const V = weights.vocabSize;
  converted = {
    shape: { family: c.arch === 'qwen3' ? 'qwen3' : 'qwen2', vocab: V, hidden: H, layers: c.layers, heads, kvHeads, headDim: D, intermediate: F, ropeTheta: c.ropeTheta, epsilon: c.eps, maxPositions: c.contextLength },
    embed: weights.embed,
    finalNorm: weights.finalNorm,
    ...(c.tiedEmbeddings ? {} : { lmHead: transpose(weights.lmHead, V, H) }),
    layers: weights.layers.map((l) => ({
      inputNorm: l.inputNorm,
      q: transpose(l.q, heads * D, H), k: transpose(l.k, kvHeads * D, H), v: transpose(l.v, kvHeads * D, H),
      ...(l.qNorm && l.kNorm ? { qNorm: l.qNorm, kNorm: l.kNorm } : {}),
      o: transpose(l.o, H, heads * D),
      postAttentionNorm: l.postNorm,
      gate: transpose(l.gate, F, H), up: transpose(l.up, F, H), down: transpose(l.down, H, F),
    })),
  };
  asReference.set(weights, converted);
  return converted;
}

/** Float64 logits (positions × vocab) of a full forward pass over `tokens`, without a cache (the one reference). */
export function referenceLogits(weights: TinyWeights, tokens: readonly number[]): Float64Array[] {
  return decoderReferenceLogits(referenceWeights(weights), tokens);
}

/** log_softmax, to compare with a runtime that returns log-probabilities. */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - max);
  const lse = max + Math.log(sum);
  return Float64Array.from(logits, (v) => v - lse);
}
