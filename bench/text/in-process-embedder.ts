import { availableParallelism } from 'node:os';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import type { OnnxSession } from '../../src/backends/onnx/onnx-session.js';
import { runTextForward } from '../../src/instance/text-forward-pass.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { InstanceEngine } from '../../src/engine/instance-engine.js';
import type { ModelInstance } from '../../src/engine/model-instance.js';
import { now } from '../../src/wire/epoch-time.js';
import { ForwardScheduler, type TextForward } from '../../src/text/forward-scheduler.js';
import { l2Normalize } from '../../src/text/pooling.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../src/spec/tensor.js';
import type { ForwardSequence } from '../../src/wire/wire-format.js';

/** The forward-batch policy of `serve-fn start`'s --max-batch-tokens, --max-batch-requests and --batch-by-length. */
export interface ForwardBatchPolicy {
  readonly maxBatchTokens: number;
  readonly maxBatchRequests?: number;
  readonly batchByLength: boolean;
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
 * The folder's ONNX file run in this process, one batch at a time, by serve-fn's own ONNX Runtime
 * backend with the intra-op threads `serve-fn start` gives a folder's one instance (every core):
 * the forward model of a served text model without the worker thread, the queue and HTTP. Its one
 * instance runs the instance side of a forward batch (padding, the forward pass, pooling) as the
 * folder's worker does.
 */
class InProcessForward {
  /** Rows and padded tokens of the batches run so far. */
  rows = 0;
  padded = 0;
  batches = 0;
  readonly forward: TextForward;
  /** The batches this one instance has yet to finish, in order: a batch queued behind waits here, as on the worker. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly session: OnnxSession) {
    const { inputs, outputs } = session.metadata();
    const names = outputs.map((o) => o.name);
    const instance: ModelInstance = {
      index: 0,
      canQueueBehind: true,
      start: async () => undefined,
      stop: async () => undefined,
      openStream: () => { throw new Error('runs forward batches only'); },
      openSocket: () => { throw new Error('runs forward batches only'); },
      execute: (call) => {
        if (call.kind !== 'text-forward') throw new Error('runs forward batches only');
        const done = this.queue.then(async () => {
          const computeStartMs = now();
          const results = await runTextForward(call, inputs, names, async (feeds, wanted) => {
            const [rows, length] = feeds[0]!.shape;
            const produced = await this.session.run(Object.fromEntries(feeds.map((t) => [t.name, t])), wanted);
            this.rows += rows!;
            this.padded += rows! * length!;
            this.batches++;
            return wanted.map((name) => produced[name]!);
          });
          return { results, computeStartMs, computeEndMs: now() };
        });
        this.queue = done.catch(() => undefined);
        return done;
      },
    };
    const engine = new InstanceEngine({ name: 'in-process', version: '1', instanceCount: 1, recorder: new InferenceRecorder({ collectProcessMetrics: false }), log: () => undefined, factory: () => instance });
    void engine.start();
    this.forward = { engine, inputs, maxRows: 0, ready: () => true };
  }
}

/**
 * The served embedder's forward work with no server: texts tokenized beforehand, batched by the
 * text model's own ForwardScheduler (same limits and hooks, one instance), padded, run and
 * mean-pooled by the instance-side forward pass over the ONNX file in this process, and normalised
 * as the text model does.
 */
export class InProcessEmbedder {
  private constructor(private readonly forwardModel: InProcessForward, private readonly padId: number) {}

  static async create(modelFile: string, padId: number): Promise<InProcessEmbedder> {
    const session = await new OnnxBackend().load(modelFile, { options: { intraOpNumThreads: availableParallelism() } });
    return new InProcessEmbedder(new InProcessForward(session), padId);
  }

  /** A forward scheduler on the one instance's engine, as a served text model has. */
  private batcher(policy: ForwardBatchPolicy): ForwardScheduler {
    return new ForwardScheduler('in-process', this.forwardModel.forward, { pooling: 'mean', padId: this.padId, ...policy });
  }

  /** Normalised mean-pooled vectors of `sequences`, batched under `policy`. */
  embed(sequences: readonly TokenSequence[], policy: ForwardBatchPolicy): Promise<Float32Array[]> {
    return embedOn(this.batcher(policy), sequences);
  }

  /** Seconds per forward pass of a static [rows, length] batch (every row padded to `length`), mean of `runs`. */
  async staticBatchSeconds(rows: number, length: number, runs: number): Promise<number> {
    const inputs: Record<string, Tensor> = Object.fromEntries(this.forwardModel.forward.inputs.map((spec) => [
      spec.name, createTensor(spec.name, 'INT64', [rows, length], new BigInt64Array(rows * length).fill(spec.name === 'attention_mask' ? 1n : 0n)),
    ]));
    await this.forwardModel.session.run(inputs);
    const started = performance.now();
    for (let i = 0; i < runs; i++) await this.forwardModel.session.run(inputs);
    return (performance.now() - started) / 1000 / runs;
  }

  /**
   * The forward batches `waiting` queued requests give, run back to back for `seconds`: the next
   * `waiting` texts of `sequences` (in order, round the list) are queued at once, and the next lot
   * once they are answered.
   */
  async backToBack(sequences: readonly TokenSequence[], policy: ForwardBatchPolicy, waiting: number, seconds: number): Promise<BatchRunResult> {
    const forward = this.forwardModel;
    const [rowsBefore, paddedBefore, batchesBefore] = [forward.rows, forward.padded, forward.batches];
    const batcher = this.batcher(policy);
    let next = 0;
    let real = 0;
    let answered = 0;
    const started = performance.now();
    while (performance.now() - started < seconds * 1000) {
      const lot = Array.from({ length: waiting }, () => sequences[next++ % sequences.length]!);
      await embedOn(batcher, lot);
      real += lot.reduce((sum, sequence) => sum + sequence.ids.length, 0);
      answered += lot.length;
    }
    const elapsedS = (performance.now() - started) / 1000;
    return {
      tokensPerS: real / elapsedS, requestsPerS: answered / elapsedS, paddingEfficiency: real / (forward.padded - paddedBefore),
      meanRows: (forward.rows - rowsBefore) / (forward.batches - batchesBefore), seconds: elapsedS,
    };
  }

  release(): Promise<void> {
    return this.forwardModel.session.dispose();
  }
}

/** One sequence of a forward batch: its token ids and token type ids, as the tokenizer made them. */
export type TokenSequence = Omit<ForwardSequence, 'want'>;

async function embedOn(batcher: ForwardScheduler, sequences: readonly TokenSequence[]): Promise<Float32Array[]> {
  const results = await Promise.all(batcher.submitAll(sequences.map((s) => ({ ...s, want: 'pooled' as const }))));
  return results.map((r) => l2Normalize(r.row as Float32Array));
}
