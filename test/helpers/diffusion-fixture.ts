import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOnnxModel, type OnnxInitializer, type OnnxNode } from '../../src/backends/onnx/onnx-model-builder.js';
import { alphasCumprod, DDIM_DEFAULTS, type DdimConfig } from '../../src/diffusion/ddim.js';
import { EULER_DEFAULTS, eulerSigmaTable } from '../../src/diffusion/euler-discrete.js';
import { Registry } from 'prom-client';
import { createError } from '../../src/errors/index.js';
import { DiffusionMetrics } from '../../src/diffusion/diffusion-metrics.js';
import { DiffusionPipeline } from '../../src/diffusion/diffusion-pipeline.js';
import { readDiffusionFolder } from '../../src/diffusion/pipeline-folder.js';
import type { StageInstances } from '../../src/diffusion/stage-instances.js';
import type { StepLimits } from '../../src/diffusion/step-scheduler.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import type { TensorInstanceFactory, VersionBuilderContext } from '../../src/model-repository/model-version-builder.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { inThreadInstances } from '../fixtures/repository/repository-files.js';
import { tableValue, WORDPIECE_TOKENIZER } from './text-model-fixture.js';

/**
 * Tiny diffusers-style ONNX pipeline folders, written by the tests (src/backends/onnx/onnx-model-builder.ts,
 * no Python) with the input and output names optimum exports: a text encoder that is an embedding
 * table (last_hidden_state [B, L, 4]), a VAE decoder that scales every latent cell up 8× keeping
 * channels 0–2 (sample [B, 3, 8h, 8w]), and one of three denoisers:
 * - `flow`: the flow-matching oracle `(x − c)/σ`, σ = timestep/1000, c the mean of the prompt's
 *   hidden states over tokens (one value per latent channel), so Euler lands on c for any step
 *   count, shift, seed or batch company;
 * - `ddim`: the ε-oracle `(x − √ᾱ_t·c)/√(1 − ᾱ_t)`, so DDIM's x0 is c at every step (a UNet, int64 timestep);
 * - `euler`: the ε-oracle of EulerDiscreteScheduler (SD 1.x's config: leading spacing, steps_offset 1),
 *   `(x·√(σ_t²+1) − c)/σ_t` of its scaled input x, so x0 = c at every step (a UNet, int64 timestep);
 * - `conv`: a random 3×3 convolution plus c·t/1000, for which batched calls must equal single ones.
 */
export const HIDDEN = 4;
export const MAX_LENGTH = 8;
export const SCALING_FACTOR = 1.5;
export const SHIFT_FACTOR = 0.1;
const VOCAB = 472;

export type DenoiserKind = 'flow' | 'ddim' | 'euler' | 'conv';

export interface FixtureOptions {
  readonly denoiser: DenoiserKind;
  /** FlowMatchEulerDiscreteScheduler's shift (flow and conv). */
  readonly shift?: number;
  readonly dynamicShift?: boolean;
  /** Written to guider/guider_config.json when set. */
  readonly guidance?: number;
}

const EULER = { beta_schedule: 'scaled_linear', beta_start: 0.00085, beta_end: 0.012, timestep_spacing: 'leading', steps_offset: 1, prediction_type: 'epsilon' } as const;
const DDIM: DdimConfig = { ...DDIM_DEFAULTS, beta_schedule: 'scaled_linear', beta_start: 0.00085, beta_end: 0.012, clip_sample: false, set_alpha_to_one: true, steps_offset: 1 };

/** The embedding of token `id`, channel `c`: in (−0.8, 0.8). */
export const embedding = (id: number, c: number): number => Math.fround(0.8 * tableValue(id, c + 11));

export function writeDiffusionFolder(dir: string, options: FixtureOptions): string {
  const sub = (name: string) => {
    mkdirSync(join(dir, name), { recursive: true });
    return join(dir, name);
  };
  mkdirSync(dir, { recursive: true });
  const json = (file: string, value: unknown) => writeFileSync(file, JSON.stringify(value, null, 2));
  const unet = options.denoiser === 'ddim' || options.denoiser === 'euler';
  const schedulerClass = options.denoiser === 'ddim' ? 'DDIMScheduler' : options.denoiser === 'euler' ? 'EulerDiscreteScheduler' : 'FlowMatchEulerDiscreteScheduler';
  json(join(dir, 'model_index.json'), {
    _class_name: unet ? 'StableDiffusionPipeline' : 'TinyDiTPipeline', _diffusers_version: '0.35.0',
    scheduler: ['diffusers', schedulerClass], text_encoder: ['transformers', 'CLIPTextModel'],
    tokenizer: ['transformers', 'BertTokenizerFast'], [unet ? 'unet' : 'transformer']: ['diffusers', unet ? 'UNet2DConditionModel' : 'SD3Transformer2DModel'], vae: ['diffusers', 'AutoencoderKL'],
  });
  json(join(sub('scheduler'), 'scheduler_config.json'), options.denoiser === 'euler'
    ? { _class_name: 'EulerDiscreteScheduler', num_train_timesteps: 1000, ...EULER }
    : unet
    ? { _class_name: 'DDIMScheduler', ...DDIM }
    : { _class_name: 'FlowMatchEulerDiscreteScheduler', num_train_timesteps: 1000, shift: options.shift ?? 3.0, use_dynamic_shifting: options.dynamicShift ?? false, base_shift: 0.5, max_shift: 1.15, base_image_seq_len: 4, max_image_seq_len: 64 });
  copyFileSync(WORDPIECE_TOKENIZER, join(sub('tokenizer'), 'tokenizer.json'));
  json(join(dir, 'tokenizer', 'tokenizer_config.json'), { model_max_length: MAX_LENGTH });
  writeFileSync(join(sub('text_encoder'), 'model.onnx'), textEncoder());
  const denoiserDir = sub(unet ? 'unet' : 'transformer');
  writeFileSync(join(denoiserDir, 'model.onnx'), denoiser(options.denoiser));
  json(join(denoiserDir, 'config.json'), { sample_size: 4, in_channels: HIDDEN });
  writeFileSync(join(sub('vae_decoder'), 'model.onnx'), vaeDecoder());
  json(join(dir, 'vae_decoder', 'config.json'), { scaling_factor: SCALING_FACTOR, shift_factor: SHIFT_FACTOR, block_out_channels: [8, 8, 8, 8], latent_channels: HIDDEN });
  if (options.guidance !== undefined) json(join(sub('guider'), 'guider_config.json'), { _class_name: 'ClassifierFreeGuidance', guidance_scale: options.guidance });
  return dir;
}

function textEncoder(): Uint8Array {
  const table = new Float32Array(VOCAB * HIDDEN);
  for (let id = 0; id < VOCAB; id++) for (let c = 0; c < HIDDEN; c++) table[id * HIDDEN + c] = embedding(id, c);
  return buildOnnxModel({
    inputs: [{ name: 'input_ids', datatype: 'INT64', shape: ['batch', 'sequence'] }],
    outputs: [{ name: 'last_hidden_state', datatype: 'FP32', shape: ['batch', 'sequence', HIDDEN] }],
    initializers: [{ name: 'table', datatype: 'FP32', shape: [VOCAB, HIDDEN], data: table }],
    nodes: [{ op: 'Gather', inputs: ['table', 'input_ids'], outputs: ['last_hidden_state'] }],
  });
}

/** c: [B, 4, 1, 1], the mean over tokens of encoder_hidden_states. */
const TARGET_NODES: OnnxNode[] = [
  { op: 'ReduceMean', inputs: ['encoder_hidden_states'], outputs: ['mean'], attributes: { axes: { ints: [1] }, keepdims: { int: 0 } } },
  { op: 'Unsqueeze', inputs: ['mean', 'axes23'], outputs: ['c'] },
];
const TARGET_INITS: OnnxInitializer[] = [
  { name: 'axes23', datatype: 'INT64', shape: [2], data: [2, 3] },
  { name: 'col', datatype: 'INT64', shape: [4], data: [-1, 1, 1, 1] },
];

/**
 * The denoiser's model.onnx; with `latentSize`, its latent and text dims fixed (latentSize² cells,
 * MAX_LENGTH tokens), only the batch left symbolic, as an .om compiled with dynamic-batch gears needs.
 */
export function denoiser(kind: DenoiserKind, latentSize?: number): Uint8Array {
  const unet = kind === 'ddim' || kind === 'euler';
  const x = unet ? 'sample' : 'hidden_states';
  const cells = latentSize === undefined ? ['height', 'width'] : [latentSize, latentSize];
  const inputs = [
    { name: x, datatype: 'FP32' as const, shape: ['batch', HIDDEN, ...cells] },
    { name: 'timestep', datatype: unet ? ('INT64' as const) : ('FP32' as const), shape: ['batch'] },
    { name: 'encoder_hidden_states', datatype: 'FP32' as const, shape: ['batch', latentSize === undefined ? 'sequence' : MAX_LENGTH, HIDDEN] },
  ];
  const outputs = [{ name: unet ? 'out_sample' : 'out_hidden_states', datatype: 'FP32' as const, shape: ['batch', HIDDEN, ...cells] }];
  const out = outputs[0].name;
  if (kind === 'flow') {
    return buildOnnxModel({
      inputs, outputs,
      initializers: [...TARGET_INITS, { name: 'thousand', datatype: 'FP32', shape: [], data: [1000] }],
      nodes: [
        ...TARGET_NODES,
        { op: 'Div', inputs: ['timestep', 'thousand'], outputs: ['sigma'] },
        { op: 'Reshape', inputs: ['sigma', 'col'], outputs: ['sigma4'] },
        { op: 'Sub', inputs: [x, 'c'], outputs: ['diff'] },
        { op: 'Div', inputs: ['diff', 'sigma4'], outputs: [out] },
      ],
    });
  }
  if (kind === 'ddim') {
    const alphas = alphasCumprod(DDIM);
    return buildOnnxModel({
      inputs, outputs,
      initializers: [
        ...TARGET_INITS,
        { name: 'sqrt_alpha', datatype: 'FP32', shape: [alphas.length], data: alphas.map((a) => Math.sqrt(a)) },
        { name: 'sqrt_beta', datatype: 'FP32', shape: [alphas.length], data: alphas.map((a) => Math.sqrt(1 - a)) },
      ],
      nodes: [
        ...TARGET_NODES,
        { op: 'Gather', inputs: ['sqrt_alpha', 'timestep'], outputs: ['sa'] },
        { op: 'Gather', inputs: ['sqrt_beta', 'timestep'], outputs: ['sb'] },
        { op: 'Reshape', inputs: ['sa', 'col'], outputs: ['sa4'] },
        { op: 'Reshape', inputs: ['sb', 'col'], outputs: ['sb4'] },
        { op: 'Mul', inputs: ['sa4', 'c'], outputs: ['scaled'] },
        { op: 'Sub', inputs: [x, 'scaled'], outputs: ['diff'] },
        { op: 'Div', inputs: ['diff', 'sb4'], outputs: [out] },
      ],
    });
  }
  if (kind === 'euler') {
    const sigmas = eulerSigmaTable(alphasCumprod({ ...EULER_DEFAULTS, ...EULER }));
    return buildOnnxModel({
      inputs, outputs,
      initializers: [
        ...TARGET_INITS,
        { name: 'k_in', datatype: 'FP32', shape: [sigmas.length], data: sigmas.map((s) => Math.sqrt(s * s + 1) / s) },
        { name: 'k_c', datatype: 'FP32', shape: [sigmas.length], data: sigmas.map((s) => 1 / s) },
      ],
      nodes: [
        ...TARGET_NODES,
        { op: 'Gather', inputs: ['k_in', 'timestep'], outputs: ['ki'] },
        { op: 'Gather', inputs: ['k_c', 'timestep'], outputs: ['kc'] },
        { op: 'Reshape', inputs: ['ki', 'col'], outputs: ['ki4'] },
        { op: 'Reshape', inputs: ['kc', 'col'], outputs: ['kc4'] },
        { op: 'Mul', inputs: [x, 'ki4'], outputs: ['xs'] },
        { op: 'Mul', inputs: ['c', 'kc4'], outputs: ['cs'] },
        { op: 'Sub', inputs: ['xs', 'cs'], outputs: [out] },
      ],
    });
  }
  const weights = Float32Array.from({ length: HIDDEN * HIDDEN * 9 }, (_, i) => 0.2 * tableValue(i, 3));
  return buildOnnxModel({
    inputs, outputs,
    initializers: [...TARGET_INITS, { name: 'w', datatype: 'FP32', shape: [HIDDEN, HIDDEN, 3, 3], data: weights }, { name: 'thousand', datatype: 'FP32', shape: [], data: [1000] }],
    nodes: [
      ...TARGET_NODES,
      { op: 'Conv', inputs: [x, 'w'], outputs: ['conv'], attributes: { pads: { ints: [1, 1, 1, 1] } } },
      { op: 'Div', inputs: ['timestep', 'thousand'], outputs: ['sigma'] },
      { op: 'Reshape', inputs: ['sigma', 'col'], outputs: ['sigma4'] },
      { op: 'Mul', inputs: ['c', 'sigma4'], outputs: ['bias'] },
      { op: 'Add', inputs: ['conv', 'bias'], outputs: [out] },
    ],
  });
}

function vaeDecoder(): Uint8Array {
  return buildOnnxModel({
    inputs: [{ name: 'latent_sample', datatype: 'FP32', shape: ['batch', HIDDEN, 'height', 'width'] }],
    outputs: [{ name: 'sample', datatype: 'FP32', shape: ['batch', 3, 'pixels_h', 'pixels_w'] }],
    initializers: [
      { name: 'starts', datatype: 'INT64', shape: [1], data: [0] },
      { name: 'ends', datatype: 'INT64', shape: [1], data: [3] },
      { name: 'axis1', datatype: 'INT64', shape: [1], data: [1] },
      { name: 'roi', datatype: 'FP32', shape: [0], data: [] },
      { name: 'scales', datatype: 'FP32', shape: [4], data: [1, 1, 8, 8] },
    ],
    nodes: [
      { op: 'Slice', inputs: ['latent_sample', 'starts', 'ends', 'axis1'], outputs: ['rgb'] },
      { op: 'Resize', inputs: ['rgb', 'roi', 'scales'], outputs: ['sample'], attributes: { mode: { string: 'nearest' } } },
    ],
  });
}

/** The per-channel target c of a prompt: the mean of its padded tokens' embeddings, as the oracle computes it. */
export async function promptTarget(prompt: string): Promise<Float32Array> {
  const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
  const { ids } = await tokenizer.encode(prompt, { maxLength: MAX_LENGTH });
  const padded = Array.from({ length: MAX_LENGTH }, (_, i) => (i < ids.length ? ids[i] : tokenizer.padId));
  return Float32Array.from({ length: HIDDEN }, (_, c) => padded.reduce((sum, id) => sum + embedding(id, c), 0) / MAX_LENGTH);
}

/** The pixel values (R, G, B) the oracle pipelines must produce: the target decoded, as diffusers rounds it. */
export async function oraclePixel(prompt: string, guidance = 1, negative = ''): Promise<number[]> {
  const pos = await promptTarget(prompt);
  const target = guidance > 1 ? (await promptTarget(negative)).map((n, c) => n + guidance * (pos[c] - n)) : pos;
  return [0, 1, 2].map((c) => Math.round(Math.min(1, Math.max(0, (target[c] / SCALING_FACTOR + SHIFT_FACTOR) / 2 + 0.5)) * 255));
}

/** A started pipeline on a fixture folder, its stages' instances in the test's thread unless `instanceFactory` says otherwise. */
export async function loadFixturePipeline(dir: string, name: string, options: { limits?: StepLimits; instanceFactory?: TensorInstanceFactory; instances?: StageInstances } = {}) {
  const registry = new Registry();
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const ctx: VersionBuilderContext = {
    recorder, log: () => undefined, infer: () => Promise.reject(new Error('unused')),
    resolve: (model) => {
      throw createError('SF_ERR_MODEL_UNKNOWN', model);
    },
    instanceFactory: options.instanceFactory ?? inThreadInstances,
  };
  const p = await DiffusionPipeline.load(readDiffusionFolder(dir), name, ctx, options.limits ?? { maxRunning: 8, admissionWaitUs: 1000 }, new DiffusionMetrics(registry), options.instances);
  await p.start();
  return { p, registry, recorder };
}
