import {
  Endpoint, GenerativeModel, Model, createTensor,
  type BackendSession, type DecoderStepHook, type DecoderStepResult, type DecoderStepRow, type ModelContext, type Tensor,
} from 'serve-fn';

/** The model folder beside this file: config.json, tokenizer.json, tokenizer_config.json, generation_config.json and the ONNX decoder. */
export const MODEL_FOLDER = 'Qwen3-0.6B';

/** One sequence's KV cache: the last run's `present.N.key/value`, [1, kv_heads, length, head_dim] each. */
interface SequenceCache {
  length: number;
  present: Record<string, Tensor>;
}

/**
 * Qwen3 as a generator class: serve-fn tokenizes, applies the folder's chat template, schedules
 * (continuous batching), samples, stops and speaks the OpenAI / vLLM and KServe protocols; this
 * class runs the decoder (here the folder's optimum ONNX export, but an NPU session or a quantised
 * runtime fits the same hook) and keeps each sequence's KV cache itself, keyed by sequence id.
 */
@Model({ name: 'qwen3-class', description: 'Qwen3 behind a step hook' })
@GenerativeModel({ folder: MODEL_FOLDER })
export class Qwen3Decoder implements DecoderStepHook {
  private session!: BackendSession;
  private layers = 0;
  private readonly caches = new Map<number, SequenceCache>();

  async initialize(ctx: ModelContext): Promise<void> {
    this.session = await ctx.loadModel(`${MODEL_FOLDER}/onnx/model.onnx`);
    this.layers = this.session.metadata().inputs.filter((s) => /^past_key_values\.\d+\.key$/.test(s.name)).length;
  }

  /** One scheduler iteration: each running sequence's new tokens (a prompt chunk, or the token sampled last step). */
  async step(rows: readonly DecoderStepRow[]): Promise<DecoderStepResult> {
    const logits: (Float32Array | undefined)[] = [];
    // One sequence per run keeps the example short; the folder runtime pads rows into one batched run.
    for (const row of rows) logits.push(await this.run(row));
    return { rows: logits };
  }

  /** Finished, cancelled and preempted sequences: their caches go. */
  release(sequenceIds: readonly number[]): void {
    for (const id of sequenceIds) this.caches.delete(id);
  }

  /** The sequences whose caches this instance holds. */
  @Endpoint('/qwen3-class/cache', { method: 'GET' })
  cache(): { sequences: number[]; tokens: number } {
    return { sequences: [...this.caches.keys()], tokens: [...this.caches.values()].reduce((sum, c) => sum + c.length, 0) };
  }

  async finalize(): Promise<void> {
    await this.session.dispose();
  }

  private async run(row: DecoderStepRow): Promise<Float32Array | undefined> {
    const cache = this.cacheFor(row);
    const fresh = row.tokenIds.length;
    const total = cache.length + fresh;
    const feeds: Record<string, Tensor> = {
      input_ids: createTensor('input_ids', 'INT64', [1, fresh], BigInt64Array.from(row.tokenIds, BigInt)),
      attention_mask: createTensor('attention_mask', 'INT64', [1, total], new BigInt64Array(total).fill(1n)),
      position_ids: createTensor('position_ids', 'INT64', [1, fresh], BigInt64Array.from(row.tokenIds, (_, k) => BigInt(cache.length + k))),
    };
    for (let l = 0; l < this.layers; l++) {
      for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = { ...cache.present[`present.${l}.${kv}`]!, name: `past_key_values.${l}.${kv}` };
    }
    const outputs = ['logits', ...Array.from({ length: this.layers }, (_, l) => [`present.${l}.key`, `present.${l}.value`]).flat()];
    const { logits, ...present } = await this.session.run(feeds, outputs);
    this.caches.set(row.sequenceId, { length: total, present });
    if (row.logits === 'none') return undefined;
    const vocab = logits!.shape.at(-1)!;
    const data = logits!.data as Float32Array;
    return row.logits === 'all' ? data.slice() : data.slice(data.length - vocab);
  }

  /**
   * The sequence's cache cut to the `cachedLength` tokens the step builds on: empty for a new or
   * recomputed sequence.
   */
  private cacheFor(row: DecoderStepRow): SequenceCache {
    const cache = this.caches.get(row.sequenceId);
    if (cache && cache.length === row.cachedLength) return cache;
    const present: Record<string, Tensor> = {};
    for (let l = 0; l < this.layers; l++) {
      for (const kv of ['key', 'value']) present[`present.${l}.${kv}`] = this.keep(cache?.present[`present.${l}.${kv}`], row.cachedLength);
    }
    return { length: row.cachedLength, present };
  }

  /** The first `length` positions of a [1, kv_heads, past, head_dim] cache tensor (an empty one without a cache). */
  private keep(tensor: Tensor | undefined, length: number): Tensor {
    const [, heads, past, headDim] = tensor?.shape ?? this.pastShape();
    const data = new Float32Array(heads! * length * headDim!);
    if (tensor) for (let h = 0; h < heads!; h++) data.set((tensor.data as Float32Array).subarray(h * past! * headDim!, (h * past! + length) * headDim!), h * length * headDim!);
    return createTensor('past', 'FP32', [1, heads!, length, headDim!], data);
  }

  private pastShape(): readonly number[] {
    return this.session.metadata().inputs.find((s) => s.name === 'past_key_values.0.key')!.shape;
  }
}
