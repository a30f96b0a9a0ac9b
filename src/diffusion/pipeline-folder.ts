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
 * vae_decoder/model.onnx (+ config.json for scaling_factor, shift_factor, block_out_channels).
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
  const moreEncoders = moreTextEncoders(dir);
  if (moreEncoders) fail(moreEncoders);
  const schedulerJson = readJson(join(dir, 'scheduler/scheduler_config.json'), fail)!;
  const scheduler = schedulerFromConfig(schedulerJson, (why) => fail(`scheduler: ${why}`)) ?? fail(`scheduler '${String(schedulerJson._class_name)}' is not supported (supported: ${SUPPORTED_SCHEDULERS.join(', ')})`);
  const tokenizerConfig = readJson(join(dir, 'tokenizer/tokenizer_config.json'), fail) ?? {};
  const vae = readJson(join(dir, 'vae_decoder/config.json'), fail) ?? {};
  const denoiserConfig = readJson(join(dir, `${denoiserKind}/config.json`), fail) ?? {};
  const blocks = Array.isArray(vae.block_out_channels) ? vae.block_out_channels.length : 4;
  const vaeScaleFactor = 2 ** (blocks - 1);
  const sampleSize = numberOr(denoiserConfig.sample_size, denoiserKind === 'unet' ? 64 : 128);
  const className = String(index._class_name ?? '');
  const pipelineDefaults = PIPELINE_DEFAULTS[className] ?? (denoiserKind === 'unet' ? PIPELINE_DEFAULTS.StableDiffusionPipeline : PIPELINE_DEFAULTS.StableDiffusion3Pipeline);
  // diffusers' modular pipelines keep the guidance in guider/guider_config.json (ClassifierFreeGuidance's guidance_scale).
  const guider = readJson(join(dir, 'guider/guider_config.json'), fail);
  const maxLength = numberOr(tokenizerConfig.model_max_length, 77);
  return {
    dir,
    name: basename(dir),
    className,
    scheduler,
    tokenizerFile: join(dir, 'tokenizer/tokenizer.json'),
    // transformers writes a huge sentinel (1e30) when a tokenizer has no limit; CLIP's 77 is the pipelines' default.
    maxLength: maxLength > 1e6 ? 77 : maxLength,
    textEncoderFile: join(dir, 'text_encoder/model.onnx'),
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
 * Why a folder with a second or third text encoder (diffusers' `tokenizer_2/` + `text_encoder_2/`,
 * `tokenizer_3/` + `text_encoder_3/`: SD3 has three, Flux two) is refused, naming each of those
 * encoders' files found and missing; undefined for a one-encoder folder. Serving one needs the
 * encoders' hidden states joined and their pooled output fed as the denoiser's `pooled_projections`,
 * which this server does not do yet.
 */
function moreTextEncoders(dir: string): string | undefined {
  const extra = [2, 3].filter((n) => existsSync(join(dir, `text_encoder_${n}`)) || existsSync(join(dir, `tokenizer_${n}`)));
  if (extra.length === 0) return undefined;
  const parts = extra.flatMap((n) => [`tokenizer_${n}/tokenizer.json`, `text_encoder_${n}/model.onnx`]);
  const found = parts.filter((rel) => existsSync(join(dir, rel)));
  const missing = parts.filter((rel) => !found.includes(rel));
  return `a pipeline with ${extra.length + 1} text encoders (SD3 has three, Flux two): found ${found.length > 0 ? found.join(', ') : 'none of their files'}` +
    `${missing.length > 0 ? `, missing ${missing.join(', ')}` : ''}; serve-fn feeds one text encoder (the others' joined hidden states and pooled_projections are not served yet)`;
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
