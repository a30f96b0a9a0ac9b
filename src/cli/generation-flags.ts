import { InvalidArgumentError, Option, type Command } from 'commander';
import { DEFAULT_GENERATOR_LIMITS, type GeneratorServeOptions } from '../generation/folder-generator.js';
import { withNotes } from './option-help.js';

/** What commander gives for the generation flags of `start` and `dev`. */
export interface GenerationFlags {
  maxNumSeqs?: number;
  maxNumBatchedTokens?: number;
  maxModelLen?: number;
  kvCacheSpace?: number;
}

function count(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

function gib(value: string): number {
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError('expected a positive number of GiB');
  return n;
}

/** vLLM's engine flags under vLLM's names (https://docs.vllm.ai/en/latest/configuration/engine_args.html); --kv-cache-space is VLLM_CPU_KVCACHE_SPACE. */
const GENERATION_OPTIONS: readonly (readonly [Option, keyof GenerationFlags])[] = [
  [withNotes(new Option('--max-num-seqs <n>', 'sequences in one scheduler step: of a generative model, and of a diffusion denoiser batched step by step as vLLM-Omni').argParser(count).env('SERVE_FN_MAX_NUM_SEQS'), { default: `${DEFAULT_GENERATOR_LIMITS.maxNumSeqs}; 8 for a diffusion denoiser` }), 'maxNumSeqs'],
  [withNotes(new Option('--max-num-batched-tokens <n>', 'generative models: tokens in one scheduler step (decodes first, then prefill chunks)').argParser(count).env('SERVE_FN_MAX_NUM_BATCHED_TOKENS'), { default: String(DEFAULT_GENERATOR_LIMITS.maxNumBatchedTokens) }), 'maxNumBatchedTokens'],
  [withNotes(new Option('--max-model-len <n>', "generative models: the context length, prompt and output").argParser(count).env('SERVE_FN_MAX_MODEL_LEN'), { default: "config.json's max_position_embeddings" }), 'maxModelLen'],
  [withNotes(new Option('--kv-cache-space <GiB>', 'generative models: KV cache per instance, in 16-token blocks').argParser(gib).env('VLLM_CPU_KVCACHE_SPACE'), { default: String(DEFAULT_GENERATOR_LIMITS.kvCacheSpaceGiB) }), 'kvCacheSpace'],
];

const GENERATION_HELP_GROUP = "Generative models (vLLM's flags):";

export function generationFlagOptions(command: Command): Command {
  for (const [option] of GENERATION_OPTIONS) command.addOption(option.helpGroup(GENERATION_HELP_GROUP));
  return command;
}

export function generationServeOptions(flags: GenerationFlags, servedModelName: string | undefined): GeneratorServeOptions {
  return { servedModelName, maxNumSeqs: flags.maxNumSeqs, maxNumBatchedTokens: flags.maxNumBatchedTokens, maxModelLen: flags.maxModelLen, kvCacheSpaceGiB: flags.kvCacheSpace };
}

/** The flags again as arguments, for the `start` process `dev` runs. */
export function generationFlagArgs(flags: GenerationFlags): string[] {
  return GENERATION_OPTIONS.flatMap(([option, key]) => (flags[key] === undefined ? [] : [option.long!, String(flags[key])]));
}
