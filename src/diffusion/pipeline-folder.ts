import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createError } from '../errors/index.js';
import { schedulerFromConfig, SUPPORTED_SCHEDULERS, type SchedulerKind } from './denoise-schedule.js';

/**
 * A diffusers pipeline folder as its ONNX export writes it (optimum's `main_export` for
 * stable-diffusion / stable-diffusion-3 / flux: https://huggingface.co/docs/optimum/exporters/onnx/usage_guides/export_a_model,
 * diffusers' layout: https://huggingface.co/docs/diffusers/using-diffusers/loading): model_index.json,
 * scheduler/scheduler_config.json, tokenizer/tokenizer.json (+ tokenizer_config.json for
 * model_max_length), text_encoder/model.onnx, transformer/model.onnx (a DiT) or unet/model.onnx,
 * vae_decoder/model.onnx (+ config.json for scaling_factor, shift_factor, block_out_channels);
 * SDXL-style pipelines add tokenizer_2/ and text_encoder_2/ beside a UNet.
 * Recognised by these components, whatever model_index.json's `_class_name` says.
 */
export interface DiffusionFolder {
  readonly dir: string;
  /** Served under the folder's name. */
  readonly name: string;
  readonly className: string;
  readonly scheduler: SchedulerKind;
  readonly tokenizerFile: string;
  /** Prompts are cut (and padded) to this many tokens, as the pipelines call the tokenizer. */
  readonly maxLength: number;
  readonly textEncoderFile: string;
  /**
   * SDXL's second tokenizer and text encoder (tokenizer_2/, text_encoder_2/ beside a UNet): the
   * prompt is encoded by both (dual-text-encoding.ts). Its model_max_length equals the first's.
   */
  readonly secondEncoder?: { readonly tokenizerFile: string; readonly textEncoderFile: string };
  /**
   * model_index.json's `force_zeros_for_empty_prompt` (StableDiffusionXLPipeline's default: true):
   * with guidance and no negative prompt, the unconditional embeddings are zeros rather than ''
   * encoded. Read for two-encoder pipelines only, as only diffusers' SDXL pipelines have it.
   */
  readonly forceZerosForEmptyPrompt: boolean;
  readonly denoiser: { readonly kind: 'transformer' | 'unet'; readonly file: string };
  readonly vaeDecoderFile: string;
  /** Latents are divided by it before decoding (diffusers' vae.config.scaling_factor). */
  readonly scalingFactor: number;
  /** Added after the division (SD3 / Flux VAEs' shift_factor; 0 where the VAE has none). */
  readonly shiftFactor: number;
  /** Pixels per latent cell: 2^(len(block_out_channels) − 1), the pipelines' vae_scale_factor. */
  readonly vaeScaleFactor: number;
  /** The denoiser's latent channels (its config's in_channels), when the folder says. */
  readonly latentChannels?: number;
  readonly defaults: { readonly width: number; readonly height: number; readonly steps: number; readonly guidanceScale: number };
}

/** Whether `dir` is a diffusers pipeline folder (its model_index.json); readDiffusionFolder then says what is missing. */
export function isDiffusionFolder(dir: string): boolean {
  return existsSync(join(dir, 'model_index.json'));
}

/**
 * Defaults of the pipelines' `__call__` (diffusers' pipeline_stable_diffusion.py: 50 steps, 7.5;
 * pipeline_stable_diffusion_3.py: 28 steps, 7.0; pipeline_flux.py: 28 steps, 3.5), by the class
 * model_index.json names; other classes take the denoiser kind's (unet: SD's, transformer: SD3's).
 */
const PIPELINE_DEFAULTS: Readonly<Record<string, { steps: number; guidanceScale: number }>> = {
  StableDiffusionPipeline: { steps: 50, guidanceScale: 7.5 },
  StableDiffusion3Pipeline: { steps: 28, guidanceScale: 7.0 },
  FluxPipeline: { steps: 28, guidanceScale: 3.5 },
  // pipeline_stable_diffusion_xl.py: 50 steps, 5.0.
  StableDiffusionXLPipeline: { steps: 50, guidanceScale: 5.0 },
};

/** Reads and checks a pipeline folder; throws SF_ERR_DIFFUSION_FOLDER_INVALID naming every missing or unsupported part. */
export function readDiffusionFolder(path: string): DiffusionFolder {
  const dir = resolve(path);
  const fail = (why: string): never => {
    throw createError('SF_ERR_DIFFUSION_FOLDER_INVALID', dir, why);
  };
  const index = readJson(join(dir, 'model_index.json'), fail) ?? fail('model_index.json is missing');
  const file = (rel: string): string | undefined => (existsSync(join(dir, rel)) ? join(dir, rel) : undefined);
  const denoiserKind = file('transformer/model.onnx') ? 'transformer' : file('unet/model.onnx') ? 'unet' : undefined;
  const missing = [
    ...['scheduler/scheduler_config.json', 'tokenizer/tokenizer.json', 'text_encoder/model.onnx', 'vae_decoder/model.onnx'].filter((rel) => !file(rel)),
    ...(denoiserKind ? [] : ['transformer/model.onnx or unet/model.onnx']),
  ];
  if (missing.length > 0) fail(`missing ${missing.join(', ')}`);
  const secondEncoder = moreTextEncoders(dir, denoiserKind!, fail);
  const schedulerJson = readJson(join(dir, 'scheduler/scheduler_config.json'), fail)!;
  const scheduler = schedulerFromConfig(schedulerJson, (why) => fail(`scheduler: ${why}`)) ?? fail(`scheduler '${String(schedulerJson._class_name)}' is not supported (supported: ${SUPPORTED_SCHEDULERS.join(', ')})`);
  const tokenizerConfig = readJson(join(dir, 'tokenizer/tokenizer_config.json'), fail) ?? {};
  const vae = readJson(join(dir, 'vae_decoder/config.json'), fail) ?? {};
  const denoiserConfig = readJson(join(dir, `${denoiserKind}/config.json`), fail) ?? {};
  const blocks = Array.isArray(vae.block_out_channels) ? vae.block_out_channels.length : 4;
  const vaeScaleFactor = 2 ** (blocks - 1);
  const sampleSize = numberOr(denoiserConfig.sample_size, denoiserKind === 'unet' ? 64 : 128);
  const className = String(index._class_name ?? '');
  const byKind = secondEncoder ? 'StableDiffusionXLPipeline' : denoiserKind === 'unet' ? 'StableDiffusionPipeline' : 'StableDiffusion3Pipeline';
  const pipelineDefaults = PIPELINE_DEFAULTS[className] ?? PIPELINE_DEFAULTS[byKind];
  // diffusers' modular pipelines keep the guidance in guider/guider_config.json (ClassifierFreeGuidance's guidance_scale).
  const guider = readJson(join(dir, 'guider/guider_config.json'), fail);
  const maxLength = tokenLimit(tokenizerConfig);
  if (secondEncoder) {
    // encode_prompt concatenates both encoders' states token by token: their lengths must agree.
    const second = tokenLimit(readJson(join(dir, 'tokenizer_2/tokenizer_config.json'), fail) ?? {});
    if (second !== maxLength) fail(`tokenizer_2's model_max_length (${second}) differs from tokenizer's (${maxLength}); the two encoders' states are joined token by token`);
  }
  return {
    dir,
    name: basename(dir),
    className,
    scheduler,
    tokenizerFile: join(dir, 'tokenizer/tokenizer.json'),
    maxLength,
    textEncoderFile: join(dir, 'text_encoder/model.onnx'),
    ...(secondEncoder ? { secondEncoder } : {}),
    forceZerosForEmptyPrompt: secondEncoder !== undefined && index.force_zeros_for_empty_prompt !== false,
    denoiser: { kind: denoiserKind!, file: join(dir, `${denoiserKind}/model.onnx`) },
    vaeDecoderFile: join(dir, 'vae_decoder/model.onnx'),
    scalingFactor: numberOr(vae.scaling_factor, 0.18215),
    shiftFactor: numberOr(vae.shift_factor, 0),
    vaeScaleFactor,
    latentChannels: typeof denoiserConfig.in_channels === 'number' ? denoiserConfig.in_channels : undefined,
    defaults: {
      width: sampleSize * vaeScaleFactor,
      height: sampleSize * vaeScaleFactor,
      steps: pipelineDefaults.steps,
      guidanceScale: numberOr(guider?.guidance_scale, pipelineDefaults.guidanceScale),
    },
  };
}

/**
 * The second text encoder of an SDXL-style folder (tokenizer_2/ + text_encoder_2/ beside a UNet),
 * undefined for a one-encoder folder; refuses, naming each extra encoder's files found and missing,
 * a partial pair and the pipelines whose other encoders this server does not feed: SD3's three
 * (a T5 among them), Flux's CLIP + T5 beside a transformer (their `pooled_projections`).
 */
function moreTextEncoders(dir: string, denoiser: 'transformer' | 'unet', fail: (why: string) => never): DiffusionFolder['secondEncoder'] {
  const extra = [2, 3].filter((n) => existsSync(join(dir, `text_encoder_${n}`)) || existsSync(join(dir, `tokenizer_${n}`)));
  if (extra.length === 0) return undefined;
  const parts = extra.flatMap((n) => [`tokenizer_${n}/tokenizer.json`, `text_encoder_${n}/model.onnx`]);
  const found = parts.filter((rel) => existsSync(join(dir, rel)));
  const missing = parts.filter((rel) => !found.includes(rel));
  const files = `found ${found.length > 0 ? found.join(', ') : 'none of their files'}${missing.length > 0 ? `, missing ${missing.join(', ')}` : ''}`;
  if (extra.length === 1 && extra[0] === 2 && denoiser === 'unet') {
    if (missing.length > 0) fail(`an SDXL-style pipeline (two text encoders and a UNet): ${files}`);
    return { tokenizerFile: join(dir, 'tokenizer_2/tokenizer.json'), textEncoderFile: join(dir, 'text_encoder_2/model.onnx') };
  }
  return fail(`a pipeline with ${extra.length + 1} text encoders (SD3 has three, Flux two): ${files}; serve-fn feeds one text encoder, or two beside a UNet ` +
    '(SDXL); the T5 encoder and pooled_projections of SD3 / Flux transformers are not served yet');
}

/** tokenizer_config.json's model_max_length; transformers writes a huge sentinel (1e30) when a tokenizer has no limit, and CLIP's 77 is the pipelines' default. */
function tokenLimit(tokenizerConfig: Record<string, unknown>): number {
  const limit = numberOr(tokenizerConfig.model_max_length, 77);
  return limit > 1e6 ? 77 : limit;
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function readJson(file: string, fail: (why: string) => never): Record<string, unknown> | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const value = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Reported below with the file's name.
  }
  return fail(`${file} is not a JSON object`);
}
