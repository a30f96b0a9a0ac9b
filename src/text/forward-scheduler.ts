import { createError, deserializeError, ServeFnError } from '../errors/index.js';
import { checkForwardInputs, fixedSequenceLength } from '../instance/text-forward-pass.js';
import { normalizeBatchPolicy } from '../spec/batch-policy.js';
import type { BatchEntry, DynamicBatcher } from '../engine/dynamic-batcher.js';
import type { CancelSignal } from '../spec/cancel-signal.js';
import type { InstanceEngine } from '../engine/instance-engine.js';
import { batchStartMs, type RequestClock } from '../engine/request-accounting.js';
import { now } from '../wire/epoch-time.js';
import type { ForwardRow, ForwardSequence } from '../wire/wire-format.js';
import type { TensorSpec } from '../spec/tensor.js';
import type { RequestTrace } from '../tracing/request-tracing.js';
import type { PoolingMode } from './pooling.js';
import type { TextMetrics } from './text-metrics.js';

/** The model a text model's forward batches run on: a folder's model file, or a @TextModel class. */
export interface TextForward {
  /** Its instances, with their accounting (nv_* under the served name) and drain. */
  readonly engine: InstanceEngine;
  /** The token inputs it takes (input_ids, attention_mask, ...), with their shapes. */
  readonly inputs: readonly TensorSpec[];
  /** Most rows one forward pass takes; 0: any. */
  readonly maxRows: number;
  ready(): boolean;
}

export interface SequenceResult {
  readonly row: ForwardRow;
  readonly queueMs: number;
  readonly inferenceMs: number;
}

interface QueuedSequence extends RequestClock {
  readonly sequence: ForwardSequence;
}

/**
 * With --batch-by-length, the share of a batch's padded tokens that must be real: a batch of texts
 * within about 1.25× of each other's length. A forward pass on a CPU costs about its padded tokens,
 * so the queue runs as several well-filled batches rather than one half padding.
 */
const BATCH_FILL = 0.8;

export interface ForwardSchedulerOptions {
  readonly pooling: PoolingMode;
  readonly padId: number;
  readonly maxBatchTokens: number;
  readonly maxBatchRequests?: number;
  /** Form each batch around the oldest sequence with the queued ones nearest its length (BATCH_FILL). */
  readonly batchByLength: boolean;
  readonly metrics?: TextMetrics;
  /** Where a failed forward pass is reported, with its error. */
  readonly log?: (message: string, err: unknown) => void;
}

/**
 * The forward batches of one text model, a dynamic batcher on the forward model's own engine (TEI's
 * one queue, core/src/queue.rs): sequences queue one by one, a batch closes at the padded token
 * budget (rows × longest, TEI's --max-batch-tokens) or the row limit, and goes to an instance as
 * token ids; the instance pads, runs and pools (instance/text-forward-pass.ts) and answers one row
 * per sequence. A sequence whose client has gone leaves the queue (TEI drops such entries when it
 * forms a batch), so nothing is computed for it.
 */
export class ForwardScheduler {
  private readonly batcher: DynamicBatcher<QueuedSequence, SequenceResult>;
  /** The length every batch is padded to, for a model compiled for one. */
  readonly fixedLength: number | undefined;
  /** Embedding width, once a forward pass has shown it. */
  width: number | undefined;

  constructor(
    private readonly name: string,
    private readonly forward: TextForward,
    private readonly options: ForwardSchedulerOptions,
  ) {
    checkForwardInputs(name, forward.inputs);
    const fixed = (this.fixedLength = fixedSequenceLength(forward.inputs));
    const forwardRows = forward.maxRows > 0 ? forward.maxRows : Infinity;
    const maxBatchSize = Math.min(options.maxBatchRequests ?? options.maxBatchTokens, forwardRows);
    this.batcher = forward.engine.batcher(`${name} forward batches`, normalizeBatchPolicy({ maxBatchSize, maxQueueDelayUs: 0 }, name), (batch) => this.runBatch(batch), {
      // A full batch waits behind each running one, so an instance never idles between batches.
      queueBehind: true,
      budget: { limit: options.maxBatchTokens, ...(options.batchByLength && fixed === undefined ? { minFill: BATCH_FILL } : {}), cost: (queued) => fixed ?? queued.sequence.ids.length },
    });
  }

  ready(): boolean {
    return this.forward.ready();
  }

  /**
   * Queues a request's sequences together, so they can share batches; one result each, in order.
   * Once `signal` aborts, those still queued fail with SF_ERR_CANCELLED. With `trace`, the engine
   * records the request's `queue` and `compute` spans under it.
   */
  submitAll(sequences: readonly ForwardSequence[], signal?: CancelSignal, trace?: RequestTrace): Promise<SequenceResult>[] {
    const submittedMs = now();
    const results = this.forward.engine.submitAll(this.batcher, sequences.map((sequence) => ({ sequence, submittedMs })), { signal, trace });
    this.options.metrics?.queued(this.name, this.batcher.pendingCount);
    return results;
  }

  /** One forward batch on an instance, counted as one execution of the forward model. */
  private async runBatch(batch: readonly BatchEntry<QueuedSequence>[]): Promise<SequenceResult[]> {
    const queued = batch.map((entry) => entry.payload);
    const sequences = queued.map((q) => q.sequence);
    const rows = sequences.length;
    const length = this.fixedLength ?? sequences.reduce((max, s) => Math.max(max, s.ids.length), 0);
    this.options.metrics?.queued(this.name, this.batcher.pendingCount);
    this.options.metrics?.batched(this.name, rows, rows * length);
    const { engine } = this.forward;
    try {
      const outcome = await engine.runBatch(queued, async (instance, sent, queuedBehind) => {
        const done = await instance.execute({ kind: 'text-forward', sequences, pooling: this.options.pooling, padId: this.options.padId });
        const started = batchStartMs(sent, done, queuedBehind);
        for (const q of queued) q.dispatchedMs = started;
        engine.recordExecution(queued, rows, done, started);
        return done;
      });
      const end = now();
      const results = outcome.results.map((result, i) => {
        if (!result.ok) throw deserializeError(result.error);
        const dispatched = queued[i]!.dispatchedMs!;
        return { row: result.value as ForwardRow, queueMs: Math.max(0, dispatched - queued[i]!.submittedMs), inferenceMs: end - dispatched };
      });
      const pooled = results.find((_, i) => sequences[i]!.want === 'pooled');
      if (pooled) this.width = (pooled.row as Float32Array).length;
      return results;
    } catch (err) {
      // A server going down (503) stays what it is; anything else is the backend's failure (TEI's
      // 424), logged here with its cause, and answered without it: it may carry the model's internals.
      if (err instanceof ServeFnError && err.statusCode === 503) throw err;
      this.options.log?.(`text model '${this.name}': the forward pass of ${rows} inputs failed`, err);
      throw createError('SF_ERR_TEXT_BACKEND', this.name, { cause: err });
    }
  }
}
