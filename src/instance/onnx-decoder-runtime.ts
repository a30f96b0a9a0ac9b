import { createError } from '../errors/index.js';
import type { DecoderRuntime, DecoderStepResult, DecoderStepRow } from '../spec/decoder-step.js';
import type { Tensor, TensorSpec } from '../spec/tensor.js';
import { createTensor } from '../tensor/tensor-factory.js';
import { fp16BitsToNumber } from '../tensor/half-float.js';

/**
 * A DecoderRuntime over an ONNX decoder as Hugging Face optimum exports it (exporters/onnx
 * `TextDecoderWithPositionIdsOnnxConfig`): `input_ids`, `attention_mask`, `position_ids`,
 * `past_key_values.N.key/value` [batch, kv_heads, past, head_dim] in; `logits` and
 * `present.N.key/value` out. Sequences of different lengths share one run: each row's past is
 * placed at the right of the batch's longest past, with `attention_mask` zeros over the gap and
 * per-row `position_ids` (optimum's modeling_decoder.py: positions are the real tokens' count), so
 * every real token sees exactly its own sequence. Decode rows (one token) run as one batch and each
 * prefill chunk alone, so no row is padded to another's chunk (on a CPU a chunk of prompt tokens
 * fills the matrix units by itself). Between steps a sequence's cache stays where the run put it, a
 * window of `present`; while the batch of decodes is unchanged, the last step's `present` is the
 * next step's past as it is (transformers.js feeds `present.*` back as `past_key_values.*` the same
 * way), so steady decoding copies no cache; a changed batch gathers the windows once.
 */

/** What a step runs: the named inputs in, the named outputs out (an ONNX Runtime session, in the instance). */
export type DecoderSessionRun = (feeds: Readonly<Record<string, Tensor>>, outputs: readonly string[]) => Promise<Record<string, Tensor>>;

type KvArray = Float32Array | Uint16Array;

/**
 * One sequence's cache: a window of the `present.*` arrays of the run that last extended it (per
 * layer key then value, each [batch][kvHeads][stride][headDim]): row `row`, tokens `start` to
 * `start + length`. The runtime never writes into an array a run returned, so windows are shared
 * freely (a prefix-cache hit) and an unchanged batch of decodes feeds them back as its next past.
 */
interface SequenceCache {
  readonly arrays: readonly KvArray[];
  readonly batch: number;
  readonly row: number;
  readonly stride: number;
  readonly start: number;
  length: number;
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
    this.unpinIdle(rows);
    const decodes: number[] = [];
    const prefills: number[] = [];
    rows.forEach((row, i) => (row.tokenIds.length === 1 ? decodes : prefills).push(i));
    // Decodes share one run; each prefill chunk runs alone, so no chunk is padded to another's length.
    for (const group of [decodes, ...prefills.map((i) => [i])]) {
      if (group.length === 0) continue;
      const logits = await this.runGroup(group.map((i) => rows[i]!));
      group.forEach((rowIndex, k) => (out[rowIndex] = logits[k]));
    }
    return { rows: out };
  }

  release(sequenceIds: readonly number[]): void {
    for (const id of sequenceIds) this.caches.delete(id);
  }

  /** Sequence `to` starts with the first `length` cached tokens of `from` (a prefix-cache hit): the same arrays, never written in place, so nothing is copied. */
  copyPrefix(from: number, to: number, length: number): void {
    const source = this.caches.get(from);
    if (!source || source.length < length) throw new Error(`sequence ${from} holds ${source?.length ?? 0} tokens, not ${length}`);
    this.caches.set(to, { ...source, length });
  }

  private truncate(row: DecoderStepRow): void {
    const cache = this.cacheOf(row.sequenceId);
    if (row.cachedLength > cache.length) throw new Error(`sequence ${row.sequenceId} holds ${cache.length} tokens; the step says ${row.cachedLength}`);
    cache.length = row.cachedLength;
  }

  private cacheOf(id: number): SequenceCache {
    let cache = this.caches.get(id);
    if (!cache) {
      cache = { arrays: [], batch: 1, row: 0, stride: 0, start: 0, length: 0 };
      this.caches.set(id, cache);
    }
    return cache;
  }

  /**
   * A cache left out of this step (a finished sequence kept as a cached prefix, one the scheduler
   * holds back) gets arrays of its own, so it does not keep a whole batch's `present` alive.
   */
  private unpinIdle(rows: readonly DecoderStepRow[]): void {
    const stepping = new Set(rows.map((row) => row.sequenceId));
    for (const [id, cache] of this.caches) {
      if (cache.batch === 1 || stepping.has(id)) continue;
      const arrays = cache.arrays.map(() => this.kvArray(this.layout.kvHeads * cache.length * this.layout.headDim));
      arrays.forEach((array, a) => this.copyWindow(cache, a, array, 0, cache.length));
      this.caches.set(id, { arrays, batch: 1, row: 0, stride: cache.length, start: 0, length: cache.length });
    }
  }

  private kvArray(size: number): KvArray {
    return this.layout.kvType === 'FP32' ? new Float32Array(size) : new Uint16Array(size);
  }

  /** Copies array `a` of a cache's window into `target`, row `row` of a [batch, kvHeads, stride, headDim] array, ending at token `stride`. */
  private copyWindow(cache: SequenceCache, a: number, target: KvArray, row: number, stride: number): void {
    const { kvHeads, headDim } = this.layout;
    const source = cache.arrays[a]!;
    for (let h = 0; h < kvHeads; h++) {
      const from = ((cache.row * kvHeads + h) * cache.stride + cache.start) * headDim;
      target.set(source.subarray(from, from + cache.length * headDim), ((row * kvHeads + h) * stride + stride - cache.length) * headDim);
    }
  }

  /** The past arrays to feed as they are: every row's window is row b of the same arrays, ending at their last token (the last decode's batch, unchanged). */
  private reusablePast(caches: readonly SequenceCache[]): readonly KvArray[] | undefined {
    const arrays = caches[0]!.arrays;
    if (arrays.length === 0 || caches[0]!.batch !== caches.length) return undefined;
    return caches.every((c, b) => c.arrays === arrays && c.row === b && c.start + c.length === c.stride) ? arrays : undefined;
  }

  /** One run over rows with the same number of new tokens (decodes, or one prefill chunk). */
  private async runGroup(rows: readonly DecoderStepRow[]): Promise<(Float32Array | undefined)[]> {
    const { kvHeads, headDim, layers, kvType, vocabSize } = this.layout;
    const batch = rows.length;
    const fresh = rows[0]!.tokenIds.length;
    const caches = rows.map((row) => this.caches.get(row.sequenceId)!);
    const reused = this.reusablePast(caches);
    const past = reused ? caches[0]!.stride : Math.max(...caches.map((c) => c.length));
    const total = past + fresh;
    const ids = new BigInt64Array(batch * fresh);
    const positions = new BigInt64Array(batch * fresh);
    const mask = new BigInt64Array(batch * total);
    rows.forEach((row, b) => {
      const cached = caches[b]!.length;
      row.tokenIds.forEach((token, k) => {
        ids[b * fresh + k] = BigInt(token);
        positions[b * fresh + k] = BigInt(cached + k);
      });
      mask.fill(1n, b * total + past - cached, (b + 1) * total);
    });
    const feeds: Record<string, Tensor> = {
      input_ids: createTensor('input_ids', 'INT64', [batch, fresh], ids),
      attention_mask: createTensor('attention_mask', 'INT64', [batch, total], mask),
      position_ids: createTensor('position_ids', 'INT64', [batch, fresh], positions),
    };
    for (let a = 0; a < 2 * layers; a++) {
      let data = reused?.[a];
      if (!data) {
        data = this.kvArray(batch * kvHeads * past * headDim);
        for (let b = 0; b < batch; b++) if (caches[b]!.length > 0) this.copyWindow(caches[b]!, a, data, b, past);
      }
      const name = `past_key_values.${a >> 1}.${a & 1 ? 'value' : 'key'}`;
      feeds[name] = createTensor(name, kvType, [batch, kvHeads, past, headDim], data);
    }
    const produced = await this.run(feeds, this.outputNames);
    // `present` is past then the new tokens, so each row's cache is now its window of it: kept, not copied.
    const arrays: KvArray[] = [];
    for (let l = 0; l < layers; l++) arrays.push(produced[`present.${l}.key`]!.data as KvArray, produced[`present.${l}.value`]!.data as KvArray);
    caches.forEach((cache, b) => {
      this.caches.set(rows[b]!.sequenceId, { arrays, batch, row: b, stride: total, start: past - cache.length, length: cache.length + fresh });
    });
    const logits = produced.logits!;
    return rows.map((row, b) => {
      if (row.logits === 'none') return undefined;
      const count = row.logits === 'all' ? fresh : 1;
      const from = ((b + 1) * fresh - count) * vocabSize;
      // A half-precision export's logits are FP16 bit patterns; the sampler reads float32.
      return logits.datatype === 'FP16'
        ? Float32Array.from((logits.data as Uint16Array).subarray(from, from + count * vocabSize), fp16BitsToNumber)
        : (logits.data as Float32Array).slice(from, from + count * vocabSize);
    });
  }
}
