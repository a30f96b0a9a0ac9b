import { createError } from '../errors/index.js';
import type { DecoderRuntime, DecoderStepResult, DecoderStepRow } from '../spec/decoder-step.js';
import type { Tensor, TensorSpec } from '../spec/tensor.js';
import { createTensor } from '../tensor/tensor-factory.js';
import { fp16BitsToNumber } from '../tensor/half-float.js';

/**
 * A DecoderRuntime over an ONNX decoder as Hugging Face optimum exports it (exporters/onnx
 * `TextDecoderWithPositionIdsOnnxConfig`): `input_ids`, `attention_mask`, `position_ids`,
 * `past_key_values.N.key/value` [batch, kv_heads, past, head_dim] in; `logits` and
 * `present.N.key/value` out. The instance keeps each sequence's cache between steps (transformers.js
 * feeds `present.*` back as `past_key_values.*` the same way). Sequences of different lengths share
 * one run: each row's past is placed at the right of the batch's longest past and its new tokens at
 * the right of the longest chunk, with `attention_mask` zeros over the gaps and per-row
 * `position_ids` (optimum's modeling_decoder.py: positions are the real tokens' count, pads get 1),
 * so every real token sees exactly its own sequence. Decode rows (one token) and prefill chunks run
 * as two groups, so a decode row is never padded to a prompt chunk's length.
 */

/** What a step runs: the named inputs in, the named outputs out (an ONNX Runtime session, in the instance). */
export type DecoderSessionRun = (feeds: Readonly<Record<string, Tensor>>, outputs: readonly string[]) => Promise<Record<string, Tensor>>;

type KvArray = Float32Array | Uint16Array;

/** One sequence's cache: per layer, key then value, each [kvHeads][capacity][headDim]. */
interface SequenceCache {
  length: number;
  capacity: number;
  buffers: KvArray[];
}

export interface DecoderLayout {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly vocabSize: number;
  /** FP32, or FP16 for a half-precision export (its raw 16-bit patterns are copied as they are). */
  readonly kvType: 'FP32' | 'FP16';
}

const REQUIRED = ['input_ids', 'attention_mask', 'position_ids'] as const;

/** Reads the cache layout from a session's inputs and outputs; throws SF_ERR_DECODER_INVALID naming what is missing. */
export function decoderLayout(modelName: string, inputs: readonly TensorSpec[], outputs: readonly TensorSpec[], vocabSize?: number): DecoderLayout {
  const names = new Set(inputs.map((s) => s.name));
  const missing = REQUIRED.filter((n) => !names.has(n));
  if (missing.length > 0) throw createError('SF_ERR_DECODER_INVALID', modelName, `its inputs lack ${missing.join(', ')} (it has ${[...names].join(', ')})`);
  const pastKeys = inputs.filter((s) => /^past_key_values\.\d+\.key$/.test(s.name));
  if (pastKeys.length === 0) throw createError('SF_ERR_DECODER_INVALID', modelName, 'it has no past_key_values.N.key inputs: export it with --task text-generation-with-past');
  const layers = pastKeys.length;
  for (let l = 0; l < layers; l++) {
    for (const kv of ['key', 'value']) {
      if (!names.has(`past_key_values.${l}.${kv}`)) throw createError('SF_ERR_DECODER_INVALID', modelName, `input past_key_values.${l}.${kv} is missing`);
      if (!outputs.some((s) => s.name === `present.${l}.${kv}`)) throw createError('SF_ERR_DECODER_INVALID', modelName, `output present.${l}.${kv} is missing`);
    }
  }
  const logits = outputs.find((s) => s.name === 'logits');
  if (!logits) throw createError('SF_ERR_DECODER_INVALID', modelName, 'it has no logits output');
  const spec = pastKeys[0]!;
  const [, kvHeads, , headDim] = spec.shape;
  if (spec.shape.length !== 4 || !(kvHeads! > 0) || !(headDim! > 0)) throw createError('SF_ERR_DECODER_INVALID', modelName, `past_key_values.0.key has shape [${spec.shape.join(', ')}]; [batch, kv_heads, past, head_dim] with fixed kv_heads and head_dim is needed`);
  if (spec.datatype !== 'FP32' && spec.datatype !== 'FP16') throw createError('SF_ERR_DECODER_INVALID', modelName, `its cache is ${spec.datatype}; FP32 and FP16 caches are served`);
  const vocab = logits.shape.at(-1)! > 0 ? logits.shape.at(-1)! : vocabSize;
  if (!(vocab! > 0)) throw createError('SF_ERR_DECODER_INVALID', modelName, "the logits' vocabulary dimension is symbolic and config.json names no vocab_size");
  return { layers, kvHeads: kvHeads!, headDim: headDim!, vocabSize: vocab!, kvType: spec.datatype };
}

export class OnnxDecoderRuntime implements DecoderRuntime {
  readonly vocabSize: number;
  private readonly caches = new Map<number, SequenceCache>();
  private readonly outputNames: string[];

  constructor(
    private readonly layout: DecoderLayout,
    private readonly run: DecoderSessionRun,
  ) {
    this.vocabSize = layout.vocabSize;
    this.outputNames = ['logits'];
    for (let l = 0; l < layout.layers; l++) this.outputNames.push(`present.${l}.key`, `present.${l}.value`);
  }

  /** Tokens each sequence's cache holds (tests and the prefix cache read it). */
  cachedLength(sequenceId: number): number {
    return this.caches.get(sequenceId)?.length ?? 0;
  }

  async step(rows: readonly DecoderStepRow[]): Promise<DecoderStepResult> {
    const out: (Float32Array | undefined)[] = new Array(rows.length);
    for (const row of rows) this.truncate(row);
    const decodes: number[] = [];
    const prefills: number[] = [];
    rows.forEach((row, i) => (row.tokenIds.length === 1 ? decodes : prefills).push(i));
    for (const group of [decodes, prefills]) {
      if (group.length === 0) continue;
      const logits = await this.runGroup(group.map((i) => rows[i]!));
      group.forEach((rowIndex, k) => (out[rowIndex] = logits[k]));
    }
    return { rows: out };
  }

  release(sequenceIds: readonly number[]): void {
    for (const id of sequenceIds) this.caches.delete(id);
  }

  /** Copies the first `length` cached tokens of `from` into a new sequence `to` (a prefix-cache hit). */
  copyPrefix(from: number, to: number, length: number): void {
    const source = this.caches.get(from);
    if (!source || source.length < length) throw new Error(`sequence ${from} holds ${source?.length ?? 0} tokens, not ${length}`);
    const target = this.cacheOf(to);
    target.length = 0;
    this.reserve(target, length);
    const { kvHeads, headDim } = this.layout;
    source.buffers.forEach((buffer, b) => {
      for (let h = 0; h < kvHeads; h++) target.buffers[b]!.set(buffer.subarray(h * source.capacity * headDim, (h * source.capacity + length) * headDim), h * target.capacity * headDim);
    });
    target.length = length;
  }

  private truncate(row: DecoderStepRow): void {
    const cache = this.cacheOf(row.sequenceId);
    if (row.cachedLength > cache.length) throw new Error(`sequence ${row.sequenceId} holds ${cache.length} tokens; the step says ${row.cachedLength}`);
    cache.length = row.cachedLength;
  }

  private cacheOf(id: number): SequenceCache {
    let cache = this.caches.get(id);
    if (!cache) {
      cache = { length: 0, capacity: 0, buffers: [] };
      this.caches.set(id, cache);
    }
    return cache;
  }

  /** Grows a cache to hold `tokens`, doubling, copying each head's filled part. */
  private reserve(cache: SequenceCache, tokens: number): void {
    if (tokens <= cache.capacity) return;
    const { kvHeads, headDim, layers, kvType } = this.layout;
    const capacity = Math.max(tokens, cache.capacity * 2, 16);
    const make = (): KvArray => (kvType === 'FP32' ? new Float32Array(kvHeads * capacity * headDim) : new Uint16Array(kvHeads * capacity * headDim));
    const buffers = Array.from({ length: layers * 2 }, make);
    cache.buffers.forEach((old, b) => {
      for (let h = 0; h < kvHeads; h++) buffers[b]!.set(old.subarray(h * cache.capacity * headDim, (h * cache.capacity + cache.length) * headDim), h * capacity * headDim);
    });
    cache.buffers = buffers;
    cache.capacity = capacity;
  }

  private async runGroup(rows: readonly DecoderStepRow[]): Promise<(Float32Array | undefined)[]> {
    const { kvHeads, headDim, layers, kvType, vocabSize } = this.layout;
    const batch = rows.length;
    const caches = rows.map((row) => this.caches.get(row.sequenceId)!);
    const past = Math.max(...caches.map((c) => c.length));
    const fresh = Math.max(...rows.map((r) => r.tokenIds.length));
    const total = past + fresh;
    const ids = new BigInt64Array(batch * fresh);
    const positions = new BigInt64Array(batch * fresh).fill(1n);
    const mask = new BigInt64Array(batch * total);
    rows.forEach((row, b) => {
      const cached = caches[b]!.length;
      const start = fresh - row.tokenIds.length;
      row.tokenIds.forEach((token, k) => {
        ids[b * fresh + start + k] = BigInt(token);
        positions[b * fresh + start + k] = BigInt(cached + k);
      });
      mask.fill(1n, b * total + past - cached, b * total + past);
      mask.fill(1n, b * total + past + start, (b + 1) * total);
    });
    const feeds: Record<string, Tensor> = {
      input_ids: createTensor('input_ids', 'INT64', [batch, fresh], ids),
      attention_mask: createTensor('attention_mask', 'INT64', [batch, total], mask),
      position_ids: createTensor('position_ids', 'INT64', [batch, fresh], positions),
    };
    const stride = past * headDim;
    for (let l = 0; l < layers; l++) {
      for (const [kv, which] of [['key', 0], ['value', 1]] as const) {
        const data = kvType === 'FP32' ? new Float32Array(batch * kvHeads * stride) : new Uint16Array(batch * kvHeads * stride);
        caches.forEach((cache, b) => {
          const buffer = cache.buffers[2 * l + which];
          if (!buffer) return;
          for (let h = 0; h < kvHeads; h++) data.set(buffer.subarray(h * cache.capacity * headDim, (h * cache.capacity + cache.length) * headDim), ((b * kvHeads + h) * past + past - cache.length) * headDim);
        });
        const name = `past_key_values.${l}.${kv}`;
        feeds[name] = createTensor(name, kvType, [batch, kvHeads, past, headDim], data);
      }
    }
    const produced = await this.run(feeds, this.outputNames);
    // Each row's new tokens sit at the right end of `present`: copied after the cached ones.
    caches.forEach((cache, b) => {
      const count = rows[b]!.tokenIds.length;
      this.reserve(cache, cache.length + count);
      for (let l = 0; l < layers; l++) {
        for (const [kv, which] of [['key', 0], ['value', 1]] as const) {
          const present = produced[`present.${l}.${kv}`]!.data as KvArray;
          const buffer = cache.buffers[2 * l + which]!;
          for (let h = 0; h < kvHeads; h++) {
            const from = ((b * kvHeads + h) * total + total - count) * headDim;
            buffer.set(present.subarray(from, from + count * headDim), (h * cache.capacity + cache.length) * headDim);
          }
        }
      }
      cache.length += count;
    });
    const logits = produced.logits!;
    return rows.map((row, b) => {
      if (row.logits === 'none') return undefined;
      const count = row.logits === 'all' ? row.tokenIds.length : 1;
      const from = ((b + 1) * fresh - count) * vocabSize;
      // A half-precision export's logits are FP16 bit patterns; the sampler reads float32.
      return logits.datatype === 'FP16'
        ? Float32Array.from((logits.data as Uint16Array).subarray(from, from + count * vocabSize), fp16BitsToNumber)
        : (logits.data as Float32Array).slice(from, from + count * vocabSize);
    });
  }
}
