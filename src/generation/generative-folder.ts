import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createError, type ServeFnError } from '../errors/index.js';
import type { ChatTemplateSource, SamplingParams } from './text-generator.js';

/**
 * Reads a generative model folder as Hugging Face optimum's decoder export leaves it
 * (https://huggingface.co/docs/optimum-onnx/onnx/usage_guides/export_a_model, task
 * `text-generation-with-past`): config.json naming a `*ForCausalLM` architecture, tokenizer.json,
 * tokenizer_config.json (its `chat_template`) or chat_template.jinja, generation_config.json, and
 * onnx/model.onnx (transformers.js' layout) or model.onnx (optimum-cli's).
 */

const MODEL_FILES = ['onnx/model.onnx', 'model.onnx'] as const;

/** What a generative model folder says about the model, whatever runs its weights (the folder's decoder export, or a @GenerativeModel class). */
export interface GenerativeConfig {
  readonly dir: string;
  /** The folder's name: the served name unless --served-model-name says otherwise. */
  readonly name: string;
  readonly tokenizerFile: string;
  readonly architecture: string;
  /** config.json's max_position_embeddings: the context, not the tokenizer's model_max_length (as vLLM). */
  readonly maxPositionEmbeddings: number;
  readonly vocabSize: number;
  /** Bytes of KV cache one token takes in float32: layers × 2 × kv heads × head_dim × 4. */
  readonly kvBytesPerToken: number;
  /** Every id of generation_config.json's eos_token_id (a list for Qwen3) and config.json's. */
  readonly eosTokenIds: readonly number[];
  /** generation_config.json's sampling fields, as vLLM's `--generation-config auto` reads them. */
  readonly defaults: Partial<SamplingParams>;
  readonly chatTemplate?: ChatTemplateSource;
}

export interface GenerativeFolder extends GenerativeConfig {
  readonly modelFile: string;
}

function readJson(dir: string, file: string, required: boolean): Record<string, unknown> | undefined {
  const path = join(dir, file);
  if (!existsSync(path)) {
    if (required) throw invalid(dir, `${file} is missing`);
    return undefined;
  }
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not a JSON object');
    return value as Record<string, unknown>;
  } catch (err) {
    throw invalid(dir, `${file} cannot be read: ${(err as Error).message}`, err);
  }
}

function invalid(dir: string, what: string, cause?: unknown): ServeFnError {
  return createError('SF_ERR_GENERATIVE_FOLDER_INVALID', dir, what, ...(cause === undefined ? [] : [{ cause }]));
}

function architectures(config: Record<string, unknown> | undefined): string[] {
  const list = config?.architectures;
  return Array.isArray(list) ? list.filter((a): a is string => typeof a === 'string') : [];
}

/**
 * True when config.json names a `*ForCausalLM` architecture and the folder is no sentence-transformers
 * export (Qwen3-Embedding-style folders keep modules.json). Checked before text folders: a decoder
 * export also has config.json + tokenizer.json + model.onnx. A folder that claims to be a decoder
 * but lacks a file is still one, so that loading it says what is missing.
 */
export function isGenerativeFolder(dir: string): boolean {
  if (existsSync(join(dir, 'modules.json'))) return false;
  try {
    return architectures(readJson(dir, 'config.json', false)).some((a) => a.endsWith('ForCausalLM'));
  } catch {
    return false;
  }
}

function positiveInt(dir: string, config: Record<string, unknown>, key: string, fallback?: number): number {
  const value = config[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw invalid(dir, `config.json's ${key} must be a positive integer (got ${JSON.stringify(config[key])})`);
  return value;
}

function ids(value: unknown): number[] {
  return (Array.isArray(value) ? value : [value]).filter((v): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0);
}

function tokenContent(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') return (value as { content: string }).content;
  return undefined;
}

/** tokenizer_config.json's `chat_template` (a string, or transformers' list of named templates: 'default'), else chat_template.jinja. */
function chatTemplate(dir: string, tokenizerConfig: Record<string, unknown> | undefined): ChatTemplateSource | undefined {
  let template: unknown = tokenizerConfig?.chat_template;
  if (Array.isArray(template)) template = (template as { name?: unknown; template?: unknown }[]).find((t) => t.name === 'default')?.template;
  if (typeof template !== 'string' && existsSync(join(dir, 'chat_template.jinja'))) template = readFileSync(join(dir, 'chat_template.jinja'), 'utf8');
  if (typeof template !== 'string') return undefined;
  const bosToken = tokenContent(tokenizerConfig?.bos_token);
  const eosToken = tokenContent(tokenizerConfig?.eos_token);
  return { template, ...(bosToken === undefined ? {} : { bosToken }), ...(eosToken === undefined ? {} : { eosToken }) };
}

/** vLLM's get_diff_sampling_param: the generation_config.json fields it takes as defaults. */
function samplingDefaults(generation: Record<string, unknown> | undefined): Partial<SamplingParams> {
  const number = (key: string): number | undefined => (typeof generation?.[key] === 'number' ? (generation[key] as number) : undefined);
  const fields: [keyof SamplingParams, number | undefined][] = [
    ['temperature', number('temperature')], ['topP', number('top_p')], ['topK', number('top_k')], ['minP', number('min_p')],
    ['repetitionPenalty', number('repetition_penalty')], ['maxTokens', number('max_new_tokens')],
  ];
  return Object.fromEntries(fields.filter(([, v]) => v !== undefined));
}

/** Throws SF_ERR_GENERATIVE_FOLDER_INVALID naming what is missing or wrong. */
export function readGenerativeFolder(dir: string): GenerativeFolder {
  const folder = resolve(dir);
  const missing = [
    ...(existsSync(join(folder, 'tokenizer.json')) ? [] : ['tokenizer.json']),
    ...(MODEL_FILES.some((f) => existsSync(join(folder, f))) ? [] : [`a decoder export (${MODEL_FILES.join(' or ')}; optimum-cli export onnx --task text-generation-with-past)`]),
  ];
  const config = readGenerativeConfig(folder, missing.length > 0 ? `it is not a decoder export: ${missing.join(' and ')} missing` : undefined);
  return { ...config, modelFile: join(folder, MODEL_FILES.find((f) => existsSync(join(folder, f)))!) };
}

/**
 * Reads what a generative folder says about the model, leaving its weights to whatever runs them:
 * a @GenerativeModel class's folder needs no decoder export. `missing` (what the caller found
 * missing) is thrown once config.json names a causal LM.
 */
export function readGenerativeConfig(dir: string, missing?: string): GenerativeConfig {
  const folder = resolve(dir);
  const config = readJson(folder, 'config.json', true)!;
  const architecture = architectures(config).find((a) => a.endsWith('ForCausalLM'));
  if (!architecture) throw invalid(folder, `config.json names no *ForCausalLM architecture (it names ${architectures(config).join(', ') || 'none'})`);
  const tokenizerFile = join(folder, 'tokenizer.json');
  if (missing !== undefined) throw invalid(folder, missing);
  if (!existsSync(tokenizerFile)) throw invalid(folder, 'tokenizer.json is missing');
  const generation = readJson(folder, 'generation_config.json', false);
  const heads = positiveInt(folder, config, 'num_attention_heads');
  const hidden = positiveInt(folder, config, 'hidden_size');
  const headDim = positiveInt(folder, config, 'head_dim', hidden / heads);
  const kvHeads = positiveInt(folder, config, 'num_key_value_heads', heads);
  const layers = positiveInt(folder, config, 'num_hidden_layers');
  const eosTokenIds = [...new Set([...ids(generation?.eos_token_id), ...ids(config.eos_token_id)])];
  return {
    dir: folder,
    name: basename(folder),
    tokenizerFile,
    architecture,
    maxPositionEmbeddings: positiveInt(folder, config, 'max_position_embeddings'),
    vocabSize: positiveInt(folder, config, 'vocab_size'),
    kvBytesPerToken: layers * 2 * kvHeads * headDim * 4,
    eosTokenIds,
    defaults: samplingDefaults(generation),
    chatTemplate: chatTemplate(folder, readJson(folder, 'tokenizer_config.json', false)),
  };
}
