import { createError } from '../errors/index.js';
import type { InferenceModelInfo, InferRequest, InferResponse, RepositoryIndexEntry } from '../inference/inference-model.js';
import type { ServerModel } from '../inference/model-catalogue.js';
import { validateInferRequest } from '../inference/request-validation.js';
import type { TensorSpec } from '../spec/tensor.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { DiffusionPipeline } from './diffusion-pipeline.js';

/** Serve-fn's own platform: Triton has none for a diffusion pipeline. */
const PLATFORM = 'serve-fn';
const PROMPT: TensorSpec = { name: 'prompt', datatype: 'BYTES', shape: [1] };
const NEGATIVE: TensorSpec = { name: 'negative_prompt', datatype: 'BYTES', shape: [1], optional: true };
const IMAGE: TensorSpec = { name: 'image', datatype: 'UINT8', shape: [-1, -1, 3] };
/** The request parameters read, as the Images API's extensions name them. */
const PARAMETERS = ['width', 'height', 'num_inference_steps', 'guidance_scale', 'seed'] as const;

/**
 * A diffusion pipeline as a KServe v2 model on HTTP and gRPC (beside its stages): a UTF-8 `prompt`
 * (and optional `negative_prompt`) in, the image out as UINT8 [height, width, 3] RGB; request
 * parameters `width`, `height` (multiples of the pipeline's size multiple; the folder's default
 * size when absent), `num_inference_steps`, `guidance_scale`, `seed`. Runs the same pipeline, and
 * the same step-level batching, as the Images routes.
 */
export class DiffusionInferenceModel implements ServerModel {
  readonly info: InferenceModelInfo;

  constructor(private readonly pipeline: DiffusionPipeline) {
    const tensorConfig = (t: TensorSpec) => ({ name: t.name, data_type: `TYPE_${t.datatype === 'BYTES' ? 'STRING' : t.datatype}`, dims: [...t.shape], ...(t.optional ? { optional: true } : {}) });
    const inputs = [PROMPT, NEGATIVE];
    this.info = {
      name: pipeline.name, version: '1', platform: PLATFORM, inputs, outputs: [IMAGE], maxBatchSize: 0, decoupled: false,
      config: { name: pipeline.name, platform: PLATFORM, backend: PLATFORM, max_batch_size: 0, input: inputs.map(tensorConfig), output: [tensorConfig(IMAGE)] },
    };
  }

  ready(): boolean {
    return this.pipeline.ready();
  }

  indexEntry(): RepositoryIndexEntry {
    const { name, version } = this.info;
    return this.ready() ? { name, version, state: 'READY' } : { name, version, state: 'UNAVAILABLE', reason: 'its stages are not ready' };
  }

  async infer(request: InferRequest): Promise<InferResponse> {
    const { wire } = validateInferRequest(this.info, request);
    const text = (name: string): string | undefined => {
      const tensor = wire.inputs.find((t) => t.name === name);
      return tensor && Buffer.from((tensor.data as Uint8Array[])[0]).toString('utf8');
    };
    const p = wire.parameters;
    const number = (key: (typeof PARAMETERS)[number], integer: boolean, min: number): number | undefined => {
      const value = p[key];
      if (value === undefined) return undefined;
      if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min) throw createError('SF_ERR_BAD_REQUEST', `parameter '${key}' must be ${integer ? 'an integer' : 'a number'} of at least ${min}`);
      return value;
    };
    const { defaults } = this.pipeline.folder;
    const width = number('width', true, 1) ?? defaults.width;
    const height = number('height', true, 1) ?? defaults.height;
    const multiple = this.pipeline.sizeMultiple;
    if (width % multiple !== 0 || height % multiple !== 0) throw createError('SF_ERR_BAD_REQUEST', `parameters 'width' and 'height' must be multiples of ${multiple} (got ${width}x${height})`);
    const image = await this.pipeline.generate({
      prompt: text('prompt')!, negativePrompt: text('negative_prompt'), width, height,
      steps: number('num_inference_steps', true, 1) ?? defaults.steps, guidanceScale: number('guidance_scale', false, 0) ?? defaults.guidanceScale,
      seed: number('seed', true, 0), signal: request.signal,
    });
    const wanted = wire.outputs;
    const output = createTensor('image', 'UINT8', [image.height, image.width, 3], image.rgb);
    return { modelName: this.info.name, modelVersion: this.info.version, id: request.id, outputs: wanted.length === 0 || wanted.includes('image') ? [output] : [] };
  }
}
