import { createError } from '../../errors/index.js';
import type { DiffusionPipeline } from '../../diffusion/diffusion-pipeline.js';
import { IMAGE_FORMATS, type ImageFormat } from '../../diffusion/image-encoding.js';
import { FieldError, type Body } from './openai-fields.js';

/**
 * A `POST /v1/images/generations` body read as OpenAI's Images API defines it
 * (openai-python src/openai/types/image_generate_params.py) plus vLLM-Omni's extensions
 * (`negative_prompt`, `num_inference_steps`, `guidance_scale`, `seed`). `quality`, `style`,
 * `moderation` and `user` are accepted and ignored (a diffusers pipeline has no such knobs);
 * `background: "transparent"` is refused, as the pipelines produce no alpha.
 */
export interface ImageGenerationRequest {
  readonly pipeline: DiffusionPipeline;
  readonly prompt: string;
  readonly negativePrompt?: string;
  readonly n: number;
  readonly width: number;
  readonly height: number;
  readonly steps: number;
  readonly guidanceScale: number;
  readonly seed?: number;
  readonly responseFormat: 'b64_json' | 'url';
  readonly outputFormat: ImageFormat;
  readonly outputCompression?: number;
  readonly stream: boolean;
  readonly partialImages: number;
}

const QUALITY = ['standard', 'hd', 'low', 'medium', 'high', 'auto'];
const STYLE = ['vivid', 'natural'];
const BACKGROUND = ['opaque', 'auto'];
/** The largest side served: gpt-image-2's 3840. */
const MAX_SIDE = 3840;
/** Far above any pipeline's default (diffusers' SD uses 50); bounds the work one request can ask for. */
export const MAX_STEPS = 1000;

function isNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function integer(body: Body, field: string, min: number, max: number): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!isNumber(value) || !Number.isInteger(value) || value < min || value > max) throw new FieldError(field, `\`${field}\` must be an integer from ${min} to ${max}`);
  return value;
}

function oneOf<T extends string>(body: Body, field: string, allowed: readonly T[]): T | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !allowed.includes(value as T)) throw new FieldError(field, `\`${field}\` must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`);
  return value as T;
}

function text(body: Body, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new FieldError(field, `\`${field}\` must be a string`);
  return value;
}

/**
 * Reads and checks the body; `pipelines` are the served image models. An unknown `model` is a 404
 * even with one model served (OpenAI's answer); without `model`, the one served model is used.
 */
export function readImageRequest(body: Body, pipelines: readonly DiffusionPipeline[]): ImageGenerationRequest {
  const name = text(body, 'model');
  const names = pipelines.map((p) => p.name);
  const pipeline = name === undefined ? (pipelines.length === 1 ? pipelines[0] : undefined) : pipelines.find((p) => p.name === name);
  if (!pipeline) {
    if (name === undefined) throw new FieldError('model', `\`model\` is required: several image models are served (${names.join(', ')})`);
    throw Object.assign(createError('SF_ERR_DIFFUSION_MODEL_UNKNOWN', name, names.join(', ')), { param: 'model' });
  }
  const prompt = text(body, 'prompt');
  if (prompt === undefined || prompt.length === 0) throw new FieldError('prompt', '`prompt` is required');
  const { width, height } = readSize(text(body, 'size') ?? 'auto', pipeline);
  oneOf(body, 'quality', QUALITY);
  oneOf(body, 'style', STYLE);
  text(body, 'user');
  if (body.background === 'transparent') throw new FieldError('background', '`background` \'transparent\' is not supported: the pipeline produces no alpha channel');
  oneOf(body, 'background', BACKGROUND);
  const guidance = body.guidance_scale;
  if (guidance !== undefined && guidance !== null && !isNumber(guidance)) throw new FieldError('guidance_scale', '`guidance_scale` must be a number');
  const stream = body.stream;
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean') throw new FieldError('stream', '`stream` must be true or false');
  return {
    pipeline,
    prompt,
    negativePrompt: text(body, 'negative_prompt'),
    n: integer(body, 'n', 1, 10) ?? 1,
    width,
    height,
    steps: integer(body, 'num_inference_steps', 1, MAX_STEPS) ?? pipeline.folder.defaults.steps,
    guidanceScale: isNumber(guidance) ? guidance : pipeline.folder.defaults.guidanceScale,
    seed: integer(body, 'seed', 0, Number.MAX_SAFE_INTEGER),
    responseFormat: oneOf(body, 'response_format', ['b64_json', 'url'] as const) ?? 'b64_json',
    outputFormat: oneOf(body, 'output_format', IMAGE_FORMATS) ?? 'png',
    outputCompression: integer(body, 'output_compression', 0, 100),
    stream: stream === true,
    partialImages: integer(body, 'partial_images', 0, 3) ?? 0,
  };
}

/** `WxH` with both sides multiples of the pipeline's 16 (gpt-image-2's rule), or `auto`: the folder's default. */
function readSize(size: string, pipeline: DiffusionPipeline): { width: number; height: number } {
  if (size === 'auto') return { width: pipeline.folder.defaults.width, height: pipeline.folder.defaults.height };
  const match = /^(\d{1,5})x(\d{1,5})$/.exec(size);
  const multiple = pipeline.sizeMultiple;
  const [width, height] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
  if (!match || width === 0 || height === 0 || width % multiple !== 0 || height % multiple !== 0 || width > MAX_SIDE || height > MAX_SIDE) {
    throw new FieldError('size', `\`size\` must be 'auto' or 'WIDTHxHEIGHT' with both sides multiples of ${multiple} up to ${MAX_SIDE} (got '${size}')`);
  }
  return { width, height };
}
