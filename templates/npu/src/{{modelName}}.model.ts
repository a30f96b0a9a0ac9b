import { ArrayMaxSize, ArrayMinSize, IsArray, IsNumber, IsString } from 'class-validator';
import { Batch, Endpoint, Instances, Model, createTensor, type BackendSession, type ModelContext } from 'serve-fn';
import { FEATURES, postprocess, preprocess, type Classification } from './{{modelName}}-processing.js';

export class ClassifyRequest {
  @IsArray() @ArrayMinSize(FEATURES) @ArrayMaxSize(FEATURES) @IsNumber({}, { each: true }) features!: number[];
}

/** Documents the answer and, like FastAPI's response_model, sends only these fields. */
export class ClassifyResponse {
  @IsString() label!: string;
  @IsNumber() probability!: number;
}

/**
 * Classifies feature vectors on an Ascend NPU: models/model.om (compiled by ATC with input
 * `input` FP32 [-1, 4], dynamic batch 1,4,8, output `logits` [-1, 2]) runs on NPU 0.
 */
@Model({ name: '{{modelName}}', version: '1', description: '{{name}}: an Ascend NPU model served by serve-fn' })
@Instances(1, { kind: 'npu', devices: [0] })
export class {{className}} {
  private session?: BackendSession;

  async initialize(ctx: ModelContext): Promise<void> {
    // Relative to ctx.modelDir (the folder of index.ts); loaded on this instance's NPU.
    this.session = await ctx.loadModel('models/model.om');
  }

  @Endpoint('/classify', { body: ClassifyRequest, response: ClassifyResponse, summary: 'Classify a feature vector on the NPU' })
  @Batch(8, 2000)
  async classify(batch: ClassifyRequest[]): Promise<Classification[]> {
    const input = createTensor('input', 'FP32', [batch.length, FEATURES], preprocess(batch.map((r) => r.features)));
    const out = await this.session!.run({ input });
    return postprocess(out.logits!.data as Float32Array, batch.length);
  }
}
