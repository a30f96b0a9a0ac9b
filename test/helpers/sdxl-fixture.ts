import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOnnxModel, type OnnxInitializer, type OnnxNode } from '../../src/backends/onnx/onnx-model-builder.js';
import { schedulerFromConfig } from '../../src/diffusion/denoise-schedule.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { HIDDEN, MAX_LENGTH, writeDiffusionFolder } from './diffusion-fixture.js';
import { SPEECH_PYTHON } from './speech-python.js';
import { tableValue, WORDPIECE_TOKENIZER } from './text-model-fixture.js';

/**
 * A tiny SDXL-shaped diffusers ONNX folder (StableDiffusionXLPipeline's layout, optimum's tensor
 * names), on the Euler ε-oracle folder of diffusion-fixture.ts (its scheduler, tokenizer and VAE):
 * - text_encoder: a CLIPTextModel-shaped stack, embedding then two tanh layers (width 4), exporting
 *   last_hidden_state, pooler_output and hidden_states.0 … hidden_states.2;
 * - tokenizer_2: the same vocabulary padded with another token (SDXL's tokenizer_2 pads with "!");
 * - text_encoder_2: a CLIPTextModelWithProjection-shaped stack (width 6) exporting text_embeds (the
 *   token mean of its last layer, projected to 3), last_hidden_state and hidden_states.0 … 2;
 * - unet: the Euler ε-oracle `(x·√(σ²+1) − c)/σ` with c = mean_tokens(encoder_hidden_states)·We +
 *   text_embeds·Wp + time_ids·Wt (random We, Wp, Wt), so the denoising lands on c and a wrong join
 *   order, layer, pooled vector or time id changes the image.
 * The expected images are computed by sdxl_reference.py (numpy) from these files' weights.
 */
export const FIRST_WIDTH = 4;
export const SECOND_WIDTH = 6;
export const PROJECTION = 3;
/** tokenizer_2's pad token (id in the wordpiece vocabulary): '[MASK]'. */
const SECOND_PAD = { id: 4, token: '[MASK]' };
const REFERENCE = fileURLToPath(new URL('../fixtures/diffusion/sdxl_reference.py', import.meta.url));

export interface SdxlOptions {
  /** model_index.json's force_zeros_for_empty_prompt; left out (diffusers' default, true) when undefined. */
  readonly forceZeros?: boolean;
}

export function writeSdxlFolder(dir: string, options: SdxlOptions = {}): string {
  writeDiffusionFolder(dir, { denoiser: 'euler' });
  const json = (file: string, value: unknown) => writeFileSync(join(dir, file), JSON.stringify(value, null, 2));
  json('model_index.json', {
    _class_name: 'StableDiffusionXLPipeline', _diffusers_version: '0.35.0',
    ...(options.forceZeros === undefined ? {} : { force_zeros_for_empty_prompt: options.forceZeros }),
    scheduler: ['diffusers', 'EulerDiscreteScheduler'], text_encoder: ['transformers', 'CLIPTextModel'], text_encoder_2: ['transformers', 'CLIPTextModelWithProjection'],
    tokenizer: ['transformers', 'CLIPTokenizer'], tokenizer_2: ['transformers', 'CLIPTokenizer'], unet: ['diffusers', 'UNet2DConditionModel'], vae: ['diffusers', 'AutoencoderKL'],
  });
  mkdirSync(join(dir, 'tokenizer_2'), { recursive: true });
  const tokenizer = JSON.parse(readFileSync(WORDPIECE_TOKENIZER, 'utf8')) as { padding: Record<string, unknown> };
  tokenizer.padding = { ...tokenizer.padding, pad_id: SECOND_PAD.id, pad_token: SECOND_PAD.token };
  json('tokenizer_2/tokenizer.json', tokenizer);
  json('tokenizer_2/tokenizer_config.json', { model_max_length: MAX_LENGTH });
  writeFileSync(join(dir, 'text_encoder', 'model.onnx'), clipEncoder(1, FIRST_WIDTH, false));
  mkdirSync(join(dir, 'text_encoder_2'), { recursive: true });
  writeFileSync(join(dir, 'text_encoder_2', 'model.onnx'), clipEncoder(2, SECOND_WIDTH, true));
  const scheduler = schedulerFromConfig(JSON.parse(readFileSync(join(dir, 'scheduler', 'scheduler_config.json'), 'utf8')) as Record<string, unknown>);
  if (scheduler?.kind !== 'euler') throw new Error('the SDXL fixture expects the Euler folder');
  writeFileSync(join(dir, 'unet', 'model.onnx'), oracleUnet(scheduler.sigmaTable));
  json('unet/config.json', { sample_size: 4, in_channels: HIDDEN, addition_embed_type: 'text_time' });
  return dir;
}

const VOCAB = 472;
const weights = (salt: number, count: number, scale: number): number[] => Array.from({ length: count }, (_, i) => scale * tableValue(i, salt));
const weight = (name: string, shape: number[], salt: number, scale: number): OnnxInitializer => ({ name, datatype: 'FP32', shape, data: weights(salt, shape.reduce((a, b) => a * b, 1), scale) });
const out = (name: string, shape: (number | string)[]) => ({ name, datatype: 'FP32' as const, shape });

/** Embedding then two tanh(x·W + b) layers; each layer's states exported as hidden_states.N (N = 0 … 2). */
function clipEncoder(salt: number, width: number, projected: boolean): Uint8Array {
  const states = ['batch', 'sequence', width];
  const nodes: OnnxNode[] = [
    { op: 'Gather', inputs: ['table', 'input_ids'], outputs: ['h0'] },
    { op: 'MatMul', inputs: ['h0', 'w1'], outputs: ['m1'] }, { op: 'Add', inputs: ['m1', 'b1'], outputs: ['a1'] }, { op: 'Tanh', inputs: ['a1'], outputs: ['h1'] },
    { op: 'MatMul', inputs: ['h1', 'w2'], outputs: ['m2'] }, { op: 'Add', inputs: ['m2', 'b2'], outputs: ['a2'] }, { op: 'Tanh', inputs: ['a2'], outputs: ['h2'] },
    { op: 'Identity', inputs: ['h2'], outputs: ['last_hidden_state'] },
    ...[0, 1, 2].map((n): OnnxNode => ({ op: 'Identity', inputs: [`h${n}`], outputs: [`hidden_states.${n}`] })),
    { op: 'ReduceMean', inputs: ['h2'], outputs: ['pooled'], attributes: { axes: { ints: [1] }, keepdims: { int: 0 } } },
    projected ? { op: 'MatMul', inputs: ['pooled', 'projection'], outputs: ['text_embeds'] } : { op: 'Identity', inputs: ['pooled'], outputs: ['pooler_output'] },
  ];
  return buildOnnxModel({
    inputs: [{ name: 'input_ids', datatype: 'INT64', shape: ['batch', 'sequence'] }],
    outputs: [
      ...(projected ? [out('text_embeds', ['batch', PROJECTION])] : []),
      out('last_hidden_state', states),
      ...(projected ? [] : [out('pooler_output', ['batch', width])]),
      ...[0, 1, 2].map((n) => out(`hidden_states.${n}`, states)),
    ],
    initializers: [
      weight('table', [VOCAB, width], 10 * salt, 1), weight('w1', [width, width], 10 * salt + 1, 1.2), weight('b1', [width], 10 * salt + 2, 0.3),
      weight('w2', [width, width], 10 * salt + 3, 1.2), weight('b2', [width], 10 * salt + 4, 0.3),
      ...(projected ? [weight('projection', [width, PROJECTION], 10 * salt + 5, 1)] : []),
    ],
    nodes,
  });
}

/** The Euler ε-oracle of diffusion-fixture.ts with its target c from all three conditions. */
function oracleUnet(sigmas: Float32Array): Uint8Array {
  const joined = FIRST_WIDTH + SECOND_WIDTH;
  return buildOnnxModel({
    inputs: [
      { name: 'sample', datatype: 'FP32', shape: ['batch', HIDDEN, 'height', 'width'] },
      { name: 'timestep', datatype: 'INT64', shape: ['batch'] },
      { name: 'encoder_hidden_states', datatype: 'FP32', shape: ['batch', 'sequence', joined] },
      { name: 'text_embeds', datatype: 'FP32', shape: ['batch', PROJECTION] },
      { name: 'time_ids', datatype: 'FP32', shape: ['batch', 6] },
    ],
    outputs: [out('out_sample', ['batch', HIDDEN, 'height', 'width'])],
    initializers: [
      weight('we', [joined, HIDDEN], 31, 1), weight('wp', [PROJECTION, HIDDEN], 32, 0.6), weight('wt', [6, HIDDEN], 33, 0.02),
      { name: 'axes23', datatype: 'INT64', shape: [2], data: [2, 3] },
      { name: 'col', datatype: 'INT64', shape: [4], data: [-1, 1, 1, 1] },
      { name: 'k_in', datatype: 'FP32', shape: [sigmas.length], data: Array.from(sigmas, (s) => Math.sqrt(s * s + 1) / s) },
      { name: 'k_c', datatype: 'FP32', shape: [sigmas.length], data: Array.from(sigmas, (s) => 1 / s) },
    ],
    nodes: [
      { op: 'ReduceMean', inputs: ['encoder_hidden_states'], outputs: ['mean'], attributes: { axes: { ints: [1] }, keepdims: { int: 0 } } },
      { op: 'MatMul', inputs: ['mean', 'we'], outputs: ['ce'] },
      { op: 'MatMul', inputs: ['text_embeds', 'wp'], outputs: ['cp'] },
      { op: 'MatMul', inputs: ['time_ids', 'wt'], outputs: ['ct'] },
      { op: 'Add', inputs: ['ce', 'cp'], outputs: ['cep'] },
      { op: 'Add', inputs: ['cep', 'ct'], outputs: ['c2'] },
      { op: 'Unsqueeze', inputs: ['c2', 'axes23'], outputs: ['c'] },
      { op: 'Gather', inputs: ['k_in', 'timestep'], outputs: ['ki'] },
      { op: 'Gather', inputs: ['k_c', 'timestep'], outputs: ['kc'] },
      { op: 'Reshape', inputs: ['ki', 'col'], outputs: ['ki4'] },
      { op: 'Reshape', inputs: ['kc', 'col'], outputs: ['kc4'] },
      { op: 'Mul', inputs: ['sample', 'ki4'], outputs: ['xs'] },
      { op: 'Mul', inputs: ['c', 'kc4'], outputs: ['cs'] },
      { op: 'Sub', inputs: ['xs', 'cs'], outputs: ['out_sample'] },
    ],
  });
}

/** One image for the reference: its prompt, its negative prompt (absent: none named), size and guidance. */
export interface SdxlCase {
  readonly prompt: string;
  readonly negativePrompt?: string;
  readonly width: number;
  readonly height: number;
  readonly guidance: number;
}

/** What sdxl_reference.py answers per case: the RGB pixel, and the pixels of wrong variants of the math. */
export interface SdxlReference {
  readonly pixel: number[];
  readonly variants: Record<string, number[]>;
}

/**
 * The expected pixel of each case from sdxl_reference.py (numpy, the folder's own ONNX weights read
 * with python3-onnx). Token ids come from each folder tokenizer, padded with its own pad id: the
 * reference checks diffusers' math after the tokenizers, not the tokenizer.
 */
export async function sdxlReference(dir: string, cases: readonly SdxlCase[]): Promise<SdxlReference[]> {
  const tokenizers = await Promise.all(['tokenizer', 'tokenizer_2'].map((sub) => TextTokenizer.fromFile(join(dir, sub, 'tokenizer.json'))));
  const ids = async (text: string) => Promise.all(tokenizers.map(async (tokenizer) => {
    const { ids: got } = await tokenizer.encode(text, { maxLength: MAX_LENGTH });
    return Array.from({ length: MAX_LENGTH }, (_, i) => (i < got.length ? got[i] : tokenizer.padId));
  }));
  const forceZeros = (JSON.parse(readFileSync(join(dir, 'model_index.json'), 'utf8')) as { force_zeros_for_empty_prompt?: boolean }).force_zeros_for_empty_prompt !== false;
  const input = {
    dir, force_zeros: forceZeros,
    cases: await Promise.all(cases.map(async (c) => ({
      ...c, ids: await ids(c.prompt), negative_ids: await ids(c.negativePrompt ?? ''), negative_given: c.negativePrompt !== undefined,
    }))),
  };
  const run = spawnSync(SPEECH_PYTHON, [REFERENCE], { input: JSON.stringify(input), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`sdxl_reference.py failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as SdxlReference[];
}
