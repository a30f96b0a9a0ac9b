import { ArrayMaxSize, ArrayMinSize, IsArray, IsNumber } from 'class-validator';
import { Batch, Endpoint, Instances, Model, type ModelContext } from 'serve-fn';
import type { BackendSession } from '../../src/backends/backend.js';

export const INPUT_SIZE = 256;
export const OUTPUT_SIZE = 16;
/**
 * The bench's 64 clients are a closed loop: with batches of 32, two instances would hold all 64
 * requests and idle while their clients' next requests come back; with 16 a full batch always waits.
 */
export const MAX_BATCH = 16;

export class MlpRequest {
  @IsArray() @ArrayMinSize(INPUT_SIZE) @ArrayMaxSize(INPUT_SIZE) @IsNumber({}, { each: true }) x!: number[];
}

const instances = Number(process.env.BENCH_INSTANCES ?? 1);

/** The bench's ONNX model (path in $BENCH_MLP_ONNX, built by run.ts), served batched and unbatched, for bench/batching. */
@Model({ name: 'mlp' })
@Instances(instances)
export class Mlp {
  private session?: BackendSession;

  async initialize(ctx: ModelContext): Promise<void> {
    this.session = await ctx.loadModel(process.env.BENCH_MLP_ONNX!, { options: { intraOpNumThreads: 1, interOpNumThreads: 1 } });
  }

  @Endpoint('/infer', { body: MlpRequest })
  @Batch(MAX_BATCH, 5000)
  async infer(batch: MlpRequest[]): Promise<{ y: number[] }[]> {
    return this.run(batch);
  }

  @Endpoint('/infer-single', { body: MlpRequest })
  async inferSingle(request: MlpRequest): Promise<{ y: number[] }> {
    return (await this.run([request]))[0];
  }

  private async run(batch: MlpRequest[]): Promise<{ y: number[] }[]> {
    const x = new Float32Array(batch.length * INPUT_SIZE);
    batch.forEach((r, i) => x.set(r.x, i * INPUT_SIZE));
    const out = await this.session!.run({ INPUT0: { name: 'INPUT0', datatype: 'FP32', shape: [batch.length, INPUT_SIZE], data: x } });
    const y = out.OUTPUT0.data as Float32Array;
    return batch.map((_, i) => ({ y: Array.from(y.subarray(i * OUTPUT_SIZE, (i + 1) * OUTPUT_SIZE)) }));
  }
}
