import { InvalidArgumentError, Option, type Command } from 'commander';
import { POOLING_MODES, TEXT_TASKS } from '../metadata/records.js';
import type { TextServeOptions } from '../text/text-model-loader.js';
import { withNotes } from './option-help.js';

/** What commander gives for the text flags of `start` and `dev`. */
export interface TextFlags {
  task?: TextServeOptions['task'];
  pooling?: TextServeOptions['pooling'];
  maxBatchTokens?: number;
  maxBatchRequests?: number;
  maxClientBatchSize?: number;
  maxConcurrentRequests?: number;
  autoTruncate?: boolean;
  batchByLength?: boolean;
  maxAnswerBytes?: number;
  dtype?: TextServeOptions['dtype'];
  defaultPromptName?: string;
  promptName?: string;
  servedModelName?: string;
  payloadLimit?: number;
}

function count(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

export function bool(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError("expected 'true' or 'false'");
}

/**
 * TEI's flags for text model folders, with TEI's names and environment variables
 * (text-embeddings-inference docs/source/en/cli_arguments.md), so a TEI deployment's arguments and
 * env carry over; --task has no TEI counterpart (TEI reads the model type only from the folder).
 */
const TEXT_OPTIONS: readonly (readonly [Option, keyof TextFlags])[] = [
  [new Option('--task <task>', 'text folders: what to serve, overriding what the folder says').choices(TEXT_TASKS).env('SERVE_FN_TASK'), 'task'],
  [new Option('--pooling <mode>', 'text folders: pooling, overriding 1_Pooling/config.json').choices(POOLING_MODES).env('POOLING'), 'pooling'],
  [withNotes(new Option('--max-batch-tokens <n>', 'text models: padded tokens per forward batch').argParser(count).env('MAX_BATCH_TOKENS'), { default: '16384' }), 'maxBatchTokens'],
  [withNotes(new Option('--max-batch-requests <n>', 'text models: rows per forward batch').argParser(count).env('MAX_BATCH_REQUESTS'), { default: 'no limit but the tokens' }), 'maxBatchRequests'],
  [withNotes(new Option('--max-client-batch-size <n>', 'text models: inputs per request').argParser(count).env('MAX_CLIENT_BATCH_SIZE'), { default: '32' }), 'maxClientBatchSize'],
  [withNotes(new Option('--max-concurrent-requests <n>', 'text models: inputs admitted at once before 429').argParser(count).env('MAX_CONCURRENT_REQUESTS'), { default: '512' }), 'maxConcurrentRequests'],
  [withNotes(new Option('--auto-truncate <bool>', 'text models: cut inputs over the model limit unless a request says otherwise').argParser(bool).env('AUTO_TRUNCATE'), { default: 'true' }), 'autoTruncate'],
  [withNotes(new Option('--batch-by-length <bool>', 'text models: batch the oldest text with the queued texts nearest its length, so less is padding').argParser(bool).env('SERVE_FN_BATCH_BY_LENGTH'), { default: 'true; false: first come, first served, as TEI does' }), 'batchByLength'],
  [withNotes(new Option('--max-answer-bytes <bytes>', "text models: largest /embed_all answer, sized before the forward pass").argParser(count).env('SERVE_FN_MAX_ANSWER_BYTES'), { default: "33554432; serve-fn's, not TEI's" }), 'maxAnswerBytes'],
  [new Option('--dtype <dtype>', 'text folders: float16 serves onnx/model_fp16.onnx').choices(['float32', 'float16']).env('DTYPE'), 'dtype'],
  [new Option('--default-prompt-name <name>', 'text models: the prompt (config_sentence_transformers.json) for requests that name none').env('DEFAULT_PROMPT_NAME'), 'defaultPromptName'],
  [new Option('--prompt-name <name>', 'the same as --default-prompt-name'), 'promptName'],
  [new Option('--served-model-name <name>', 'text and generative folders: the model name clients use; one folder only').env('SERVED_MODEL_NAME'), 'servedModelName'],
  [withNotes(new Option('--payload-limit <bytes>', 'text routes: largest request body, compressed or inflated').argParser(count).env('PAYLOAD_LIMIT'), { default: '2000000' }), 'payloadLimit'],
];

/** Listed after the server's own options, under their own heading: most services serve no text folder. */
const TEXT_HELP_GROUP = "Text models (TEI's flags and variables):";

export function textFlagOptions(command: Command): Command {
  for (const [option] of TEXT_OPTIONS) command.addOption(option.helpGroup(TEXT_HELP_GROUP));
  return command;
}

export function textServeOptions(flags: TextFlags): TextServeOptions {
  const limits = Object.fromEntries((['maxBatchTokens', 'maxBatchRequests', 'maxClientBatchSize', 'maxConcurrentRequests', 'autoTruncate', 'batchByLength', 'maxAnswerBytes'] as const).filter((k) => flags[k] !== undefined).map((k) => [k, flags[k]]));
  return { task: flags.task, pooling: flags.pooling, limits, dtype: flags.dtype, promptName: flags.defaultPromptName ?? flags.promptName, servedModelName: flags.servedModelName, payloadLimit: flags.payloadLimit };
}

/** The flags again as arguments, for the `start` process `dev` runs. */
export function textFlagArgs(flags: TextFlags): string[] {
  return TEXT_OPTIONS.flatMap(([option, key]) => (flags[key] === undefined ? [] : [option.long!, String(flags[key])]));
}
