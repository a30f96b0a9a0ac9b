import { ArrayMaxSize, ArrayMinSize, IsArray, IsInt } from 'class-validator';
import { Batch, Endpoint, Model, createTensor, type BackendSession, type ModelContext } from 'serve-fn';

/** models/add_sub.onnx takes two INT32 [batch, 16] inputs, like Triton's `simple` model. */
const WIDTH = 16;

export class AddSubRequest {
  @IsArray() @ArrayMinSize(WIDTH) @ArrayMaxSize(WIDTH) @IsInt({ each: true }) a!: number[];
  @IsArray() @ArrayMinSize(WIDTH) @ArrayMaxSize(WIDTH) @IsInt({ each: true }) b!: number[];
}

/** Documents the answer and, like FastAPI's response_model, sends only these fields. */
export class AddSubResponse {
  @IsArray() @IsInt({ each: true }) sum!: number[];
  @IsArray() @IsInt({ each: true }) difference!: number[];
}

/** Runs models/add_sub.onnx with ONNX Runtime: sum = a + b, difference = a - b, a batch at a time. */
@Model({ name: '{{modelName}}', version: '1', description: '{{name}}: an ONNX model served by serve-fn' })
export class {{className}} {
  private session?: BackendSession;

  async initialize(ctx: ModelContext): Promise<void> {
    // A relative path is taken from ctx.modelDir, the folder of the served entry (index.ts); the
    // session is disposed after finalize.
    this.session = await ctx.loadModel('models/add_sub.onnx');
  }

  @Endpoint('/add-sub', { body: AddSubRequest, response: AddSubResponse, summary: 'Add and subtract two vectors of 16 integers' })
  @Batch(8, 2000)
  async addSub(batch: AddSubRequest[]): Promise<AddSubResponse[]> {
    const shape = [batch.length, WIDTH];
    const column = (key: 'a' | 'b'): Int32Array => Int32Array.from(batch.flatMap((request) => request[key]));
    const out = await this.session!.run({
      INPUT0: createTensor('INPUT0', 'INT32', shape, column('a')),
      INPUT1: createTensor('INPUT1', 'INT32', shape, column('b')),
    });
    const row = (name: string, i: number): number[] => [...(out[name]!.data as Int32Array).subarray(i * WIDTH, (i + 1) * WIDTH)];
    return batch.map((_, i) => ({ sum: row('OUTPUT0', i), difference: row('OUTPUT1', i) }));
  }
}
