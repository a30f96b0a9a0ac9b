import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';
import type { InferenceModelInfo } from '../../src/inference/inference-model.js';
import { normalizeBatchPolicy } from '../../src/runtime/batch-policy.js';
import { DynamicBatcher, type BatchEntry } from '../../src/runtime/dynamic-batcher.js';
import { l2Normalize, poolRows } from '../../src/text/pooling.js';
import { padBatch, type TokenSequence } from '../../src/text/token-batch.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../src/tensor/tensor.js';

/** The forward-batch limits of `serve-fn start`'s --max-batch-tokens and --max-batch-requests. */
export interface ForwardBatchPolicy {
  readonly maxBatchTokens: number;
  readonly maxBatchRequests?: number;
}

export interface BatchRunResult {
  readonly tokensPerS: number;
  readonly requestsPerS: number;
  /** Real tokens / padded tokens (rows × longest) over the run's forward batches. */
  readonly paddingEfficiency: number;
  readonly meanRows: number;
  readonly seconds: number;
}

/**
 * The served embedder's forward work with no server: the folder's ONNX file in onnxruntime-node in
 * this process, with the intra-op threads `serve-fn start` gives a folder's one instance (every
 * core), fed texts tokenized beforehand, padded by the engine's padBatch, mean-pooled and
 * normalised by its pooling functions, on the batches the engine's DynamicBatcher forms from a full
 * queue under the same policy, run back to back: what one instance can do at best.
 */
export class InProcessEmbedder {
  /** The batches this one instance has yet to finish, in order. */
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly info: InferenceModelInfo,
    private readonly padId: number,
  ) {}

  static async create(modelFile: string, padId: number): Promise<InProcessEmbedder> {
    const session = await ort.InferenceSession.create(modelFile, { intraOpNumThreads: availableParallelism() });
    // padBatch reads only the input specs: the graph's [batch, sequence] INT64 token inputs.
    const inputs = session.inputNames.map((name) => ({ name, datatype: 'INT64' as const, shape: [-1, -1] }));
    const info: InferenceModelInfo = { name: 'in-process', version: '1', platform: 'onnxruntime_onnx', inputs, outputs: [], maxBatchSize: 0, config: {}, decoupled: false };
    return new InProcessEmbedder(session, info, padId);
  }

  /** One forward batch, padded to its longest row: one normalised mean-pooled vector per sequence. */
  async forward(sequences: readonly TokenSequence[]): Promise<Float32Array[]> {
    const padded = padBatch(sequences, this.info, 'right', this.padId);
    const hidden = await this.run(padded.inputs);
    const dims = hidden.dims as [number, number, number];
    return poolRows(hidden.data as Float32Array, dims, padded.mask, 'mean').map(l2Normalize);
  }

  /** Seconds per forward pass of a static [rows, length] batch (every row padded to `length`), mean of `runs`. */
  async staticBatchSeconds(rows: number, length: number, runs: number): Promise<number> {
    const inputs = this.info.inputs.map((spec) => createTensor(spec.name, 'INT64', [rows, length], new BigInt64Array(rows * length).fill(spec.name === 'attention_mask' ? 1n : 0n)));
    await this.run(inputs);
    const started = performance.now();
    for (let i = 0; i < runs; i++) await this.run(inputs);
    return (performance.now() - started) / 1000 / runs;
  }

  /**
   * The forward batches `waiting` queued requests give, run back to back for `seconds`: the next
   * `waiting` texts of `sequences` (in order, round the list) are queued at once on a batcher with
   * the policy and hooks TextModel gives its own (rows capped by --max-batch-requests, padded
   * tokens by the budget, no queue delay, one instance), and the next lot once they are answered.
   */
  async backToBack(sequences: readonly TokenSequence[], policy: ForwardBatchPolicy, waiting: number, seconds: number): Promise<BatchRunResult> {
    let running = 0;
    let padded = 0;
    let rows = 0;
    let batches = 0;
    const batcher: DynamicBatcher<TokenSequence, Float32Array> = new DynamicBatcher('in-process', normalizeBatchPolicy({ maxBatchSize: policy.maxBatchRequests ?? policy.maxBatchTokens, maxQueueDelayUs: 0 }, 'in-process'), {
      idleInstances: () => Math.max(0, 1 - running),
      queueBehindInstances: () => Math.max(0, 2 - running),
      budget: { limit: policy.maxBatchTokens, cost: (sequence) => sequence.ids.length },
      execute: async (batch: readonly BatchEntry<TokenSequence>[]) => {
        running++;
        // One instance runs one batch at a time; a batch queued behind waits here, as on the worker.
        const done = this.queue.then(() => this.forward(batch.map((entry) => entry.payload)));
        this.queue = done.catch(() => undefined);
        try {
          const vectors = await done;
          padded += Math.max(...batch.map((entry) => entry.payload.ids.length)) * batch.length;
          rows += batch.length;
          batches++;
          return vectors;
        } finally {
          running--;
          batcher.notifyIdle();
        }
      },
    });
    let next = 0;
    let real = 0;
    let answered = 0;
    const started = performance.now();
    while (performance.now() - started < seconds * 1000) {
      const lot = Array.from({ length: waiting }, () => sequences[next++ % sequences.length]!);
      await Promise.all(batcher.submitAll(lot));
      real += lot.reduce((sum, sequence) => sum + sequence.ids.length, 0);
      answered += lot.length;
    }
    const elapsedS = (performance.now() - started) / 1000;
    return { tokensPerS: real / elapsedS, requestsPerS: answered / elapsedS, paddingEfficiency: real / padded, meanRows: rows / batches, seconds: elapsedS };
  }

  release(): Promise<void> {
    return this.session.release();
  }

  private async run(inputs: readonly Tensor[]): Promise<ort.Tensor> {
    const feeds = Object.fromEntries(inputs.map((t) => [t.name, new ort.Tensor('int64', t.data as BigInt64Array, [...t.shape])]));
    const outputs = await this.session.run(feeds);
    return outputs.last_hidden_state;
  }
}
