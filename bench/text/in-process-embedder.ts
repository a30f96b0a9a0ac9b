import { availableParallelism } from 'node:os';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import type { OnnxSession } from '../../src/backends/onnx/onnx-session.js';
import type { InferenceModel, InferenceModelInfo, InferRequest, InferResponse } from '../../src/inference/inference-model.js';
import { ForwardBatcher, type TokenSequence } from '../../src/text/forward-batches.js';
import { l2Normalize } from '../../src/text/pooling.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../src/tensor/tensor.js';

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
 * the forward model of a served text model without the worker thread, the queue and HTTP.
 */
class InProcessForward implements InferenceModel {
  readonly info: InferenceModelInfo;
  /** Rows and padded tokens of the batches run so far. */
  rows = 0;
  padded = 0;
  batches = 0;
  /** The batches this one instance has yet to finish, in order: a batch queued behind waits here, as on the worker. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly session: OnnxSession) {
    const { inputs, outputs } = session.metadata();
    this.info = { name: 'in-process', version: '1', platform: 'onnxruntime_onnx', inputs, outputs, maxBatchSize: 0, config: {}, decoupled: false };
  }

  ready(): boolean {
    return true;
  }

  infer(request: InferRequest): Promise<InferResponse> {
    const run = this.queue.then(async () => {
      const [rows, length] = request.inputs[0]!.shape;
      const outputs = await this.session.run(Object.fromEntries(request.inputs.map((t) => [t.name, t])));
      this.rows += rows!;
      this.padded += rows! * length!;
      this.batches++;
      return { modelName: this.info.name, modelVersion: this.info.version, outputs: Object.values(outputs) };
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/**
 * The served embedder's forward work with no server: texts tokenized beforehand, batched, padded,
 * run and mean-pooled by the engine's ForwardBatcher (the text model's own batching, with the same
 * limits, hooks and one instance) over the ONNX file in this process, and normalised as the
 * text model does.
 */
export class InProcessEmbedder {
  private constructor(private readonly forwardModel: InProcessForward, private readonly padId: number) {}

  static async create(modelFile: string, padId: number): Promise<InProcessEmbedder> {
    const session = await new OnnxBackend().load(modelFile, { options: { intraOpNumThreads: availableParallelism() } });
    return new InProcessEmbedder(new InProcessForward(session), padId);
  }

  private batcher(policy: ForwardBatchPolicy): ForwardBatcher {
    return new ForwardBatcher('in-process', this.forwardModel, { pooling: 'mean', padId: this.padId, ...policy, instanceCount: 1 });
  }

  /** Normalised mean-pooled vectors of `sequences`, batched under `policy`. */
  embed(sequences: readonly TokenSequence[], policy: ForwardBatchPolicy): Promise<Float32Array[]> {
    return embedOn(this.batcher(policy), sequences);
  }

  /** Seconds per forward pass of a static [rows, length] batch (every row padded to `length`), mean of `runs`. */
  async staticBatchSeconds(rows: number, length: number, runs: number): Promise<number> {
    const inputs: Record<string, Tensor> = Object.fromEntries(this.forwardModel.info.inputs.map((spec) => [
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

async function embedOn(batcher: ForwardBatcher, sequences: readonly TokenSequence[]): Promise<Float32Array[]> {
  const results = await Promise.all(batcher.submitAll(sequences.map((s) => ({ ...s, want: 'pooled' as const }))));
  return results.map((r) => l2Normalize(r.row as Float32Array));
}
