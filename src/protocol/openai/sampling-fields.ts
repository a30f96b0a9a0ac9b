import type { SamplingParams, TextGenerator } from '../../generation/text-generator.js';
import { FieldError } from './openai-fields.js';
import type { RequestFields } from './request-fields.js';

/** vLLM's `max_logprobs` default: the most alternatives a request may ask for per token. */
export const MAX_LOGPROBS = 20;
/** The most choices one request may ask for: each is a sequence in the scheduler, so `n` is capped as a guard (vLLM has no cap). */
export const MAX_N = 128;

/** vLLM's `_DEFAULT_SAMPLING_PARAMS`: what applies when neither the request nor generation_config.json sets a value. */
const BUILT_IN = { temperature: 1, topP: 1, topK: 0, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1 } as const;

/** A request's sampling before its prompt is known: `maxTokens` is resolved against the context by resolveMaxTokens. */
export interface SamplingFields {
  readonly sampling: Omit<SamplingParams, 'maxTokens'>;
  /** What the request asked for (`max_completion_tokens`, else `max_tokens`); undefined = the route's default. */
  readonly maxTokens: number | undefined;
  readonly n: number;
  readonly stop: readonly string[];
  readonly includeStopString: boolean;
  readonly skipSpecialTokens: boolean;
}

const range = (ok: (v: number) => boolean, rule: string) => ({ ok, rule });

/**
 * The sampling fields both routes share, checked as vLLM's SamplingParams._verify_args checks them
 * (vllm/sampling_params.py), with request → generation_config.json → built-in precedence
 * (vLLM's `--generation-config auto`); generation_config's stop ids join the request's.
 * Logprobs are read by the route: chat and completions spell them differently.
 */
export function readSamplingFields(fields: RequestFields, generator: TextGenerator, logprobs: { logprobs?: number; promptLogprobs?: number }): SamplingFields {
  const defaults = generator.defaults;
  const temperature = fields.number('temperature', range((v) => v >= 0, 'non-negative')) ?? defaults.temperature ?? BUILT_IN.temperature;
  const topP = fields.number('top_p', range((v) => v > 0 && v <= 1, 'in (0, 1]')) ?? defaults.topP ?? BUILT_IN.topP;
  const topK = fields.integer('top_k', range((v) => v === -1 || v >= 0, '0 or -1 (disable), or at least 1')) ?? defaults.topK ?? BUILT_IN.topK;
  const minP = fields.number('min_p', range((v) => v >= 0 && v <= 1, 'in [0, 1]')) ?? defaults.minP ?? BUILT_IN.minP;
  const penalty = range((v) => v >= -2 && v <= 2, 'in [-2, 2]');
  const presencePenalty = fields.number('presence_penalty', penalty) ?? defaults.presencePenalty ?? BUILT_IN.presencePenalty;
  const frequencyPenalty = fields.number('frequency_penalty', penalty) ?? defaults.frequencyPenalty ?? BUILT_IN.frequencyPenalty;
  const repetitionPenalty = fields.number('repetition_penalty', range((v) => v > 0 && v <= 2, 'in (0, 2]')) ?? defaults.repetitionPenalty ?? BUILT_IN.repetitionPenalty;
  const seed = fields.integer('seed', range((v) => v >= -(2 ** 63) && v < 2 ** 64, 'within the int64 range'));
  const n = fields.integer('n', range((v) => v >= 1 && v <= MAX_N, `at least 1 and at most ${MAX_N}`)) ?? 1;
  const completionTokens = fields.integer('max_completion_tokens', range((v) => v >= 1, 'at least 1'));
  const maxTokens = fields.integer('max_tokens', range((v) => v >= 0, 'at least 0'));
  const minTokens = fields.integer('min_tokens', range((v) => v >= 0, 'at least 0')) ?? defaults.minTokens ?? 0;
  const asked = completionTokens ?? maxTokens;
  if (asked !== undefined && minTokens > asked) throw new FieldError('min_tokens', `min_tokens must be less than or equal to max_tokens=${asked}, got ${minTokens}.`);
  const stopTokenIds = [...new Set([...(defaults.stopTokenIds ?? []), ...(fields.integers('stop_token_ids') ?? [])])];
  return {
    sampling: {
      temperature,
      topP,
      topK,
      minP,
      ...(seed === undefined ? {} : { seed }),
      presencePenalty,
      frequencyPenalty,
      repetitionPenalty,
      ...readLogitBias(fields, generator.vocabSize),
      ...(logprobs.logprobs === undefined ? {} : { logprobs: logprobs.logprobs }),
      ...(logprobs.promptLogprobs === undefined ? {} : { promptLogprobs: logprobs.promptLogprobs }),
      minTokens,
      stopTokenIds,
      ignoreEos: fields.boolean('ignore_eos') ?? defaults.ignoreEos ?? false,
    },
    maxTokens: asked,
    n,
    stop: (fields.strings('stop') ?? []).filter((s) => s !== ''),
    includeStopString: fields.boolean('include_stop_str_in_output') ?? false,
    skipSpecialTokens: fields.boolean('skip_special_tokens') ?? true,
  };
}

/** OpenAI's `logit_bias`: token ids as strings → a bias, clamped to [-100, 100] as vLLM does; an id outside the vocabulary is a 400. */
function readLogitBias(fields: RequestFields, vocabSize: number): { logitBias?: ReadonlyMap<number, number> } {
  const raw = fields.object('logit_bias');
  if (raw === undefined) return {};
  const bias = new Map<number, number>();
  for (const [key, value] of Object.entries(raw)) {
    const id = Number(key);
    if (!/^\d+$/.test(key) || id >= vocabSize) throw new FieldError('logit_bias', `token_id(s) [${key}] in logit_bias contain out-of-vocab token ids. Vocabulary size: ${vocabSize}`);
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new FieldError('logit_bias', `logit_bias[${key}] must be a number`);
    bias.set(id, Math.min(100, Math.max(-100, value)));
  }
  return { logitBias: bias };
}

/** A logprobs count (chat's `top_logprobs`, completions' `logprobs`) checked against vLLM's cap. */
export function checkLogprobsCount(field: string, value: number | undefined): number | undefined {
  if (value !== undefined && (value < 0 || value > MAX_LOGPROBS)) {
    throw new FieldError(field, `Requested sample logprobs of ${value}, which is greater than max allowed: ${MAX_LOGPROBS}`);
  }
  return value;
}

/**
 * vLLM's max_tokens rule (vllm/entrypoints/utils.py `get_max_tokens`): the request's value, else
 * the route's default (`rest` of the context for chat, 16 for completions) and never above
 * generation_config's; the check that prompt + max_tokens fits the context is the caller's.
 */
export function resolveMaxTokens(asked: number | undefined, routeDefault: number, generator: TextGenerator): number {
  if (asked !== undefined) return asked;
  return Math.min(routeDefault, generator.defaults.maxTokens ?? Number.POSITIVE_INFINITY);
}
