import { randomUUID } from 'node:crypto';
import { createError } from '../../errors/index.js';
import { parseTextInputs } from '../../text/text-inputs.js';
import type { ScoredLabel, TextAnswer, TextEngine, TruncateOptions } from '../../text/text-engine.js';
import { aboutField, FieldError, optionalBoolean, type Body } from '../openai/openai-fields.js';

/**
 * vLLM's score and classify APIs (docs.vllm.ai "Pooling models"; the request and response models
 * in vllm/entrypoints/pooling/scoring/protocol.py and classify/protocol.py). Only texts are taken:
 * vLLM's multimodal content parts need a multimodal model, which serve-fn does not serve.
 */

/** vLLM's ScoreRequest spellings, in the order its pydantic union tries them. */
const SCORE_FIELDS = [
  ['queries', 'documents'],
  ['queries', 'items'],
  ['data_1', 'data_2'],
  ['text_1', 'text_2'],
] as const;

export interface ScorePair {
  readonly query: string;
  readonly document: string;
}

function scoreTexts(value: unknown, field: string): string[] {
  const items = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(items) || !items.every((item) => typeof item === 'string')) throw new FieldError(field, `\`${field}\` must be a string or an array of strings`);
  return items;
}

/**
 * The pairs to score: one first text against every second text (1:N, 1:1), or the two lists zipped
 * (N:N), with vLLM's messages (scoring/utils.py `_validate_score_input_lens`) for anything else.
 */
export function readScorePairs(body: Body): ScorePair[] {
  const fields = SCORE_FIELDS.find(([first, second]) => first in body && second in body);
  if (!fields) throw new FieldError('queries', 'Give the texts to score as `queries` and `documents` (or `queries` and `items`, `data_1` and `data_2`, `text_1` and `text_2`)');
  const [firstField, secondField] = fields;
  const first = scoreTexts(body[firstField], firstField);
  const second = scoreTexts(body[secondField], secondField);
  if (first.length > 1 && first.length !== second.length) throw new FieldError(firstField, 'Input lengths must be either 1:1, 1:N or N:N');
  if (first.length === 0) throw new FieldError(firstField, 'At least one text element must be given');
  if (second.length === 0) throw new FieldError(secondField, 'At least one text_pair element must be given');
  return second.map((document, i) => ({ query: first.length === 1 ? first[0] : first[i], document }));
}

/** `use_activation: false` asks for the raw logits; absent or true for sigmoid / softmax (vLLM's default). */
export function rawScores(body: Body): boolean {
  return optionalBoolean(body, 'use_activation') === false;
}

/**
 * One score per pair, in the pairs' order. Pairs are grouped by their first text so that each
 * distinct query is one TextEngine.rerank call; the client batch limit applies to the pairs together,
 * as it would to one call.
 */
export async function scorePairs(model: TextEngine, pairs: readonly ScorePair[], raw: boolean, request: Pick<TruncateOptions, 'signal' | 'trace'> = {}): Promise<{ scores: number[]; promptTokens: number }> {
  const { maxClientBatchSize } = model.info.limits;
  if (pairs.length > maxClientBatchSize) throw createError('SF_ERR_TEXT_BATCH_TOO_LARGE', pairs.length, maxClientBatchSize);
  const byQuery = new Map<string, number[]>();
  pairs.forEach(({ query }, i) => byQuery.set(query, [...(byQuery.get(query) ?? []), i]));
  const scores = new Array<number>(pairs.length);
  const answers = await Promise.all(
    [...byQuery].map(async ([query, indexes]) => {
      const answer = await model.rerank(query, indexes.map((i) => pairs[i].document), { rawScores: raw, ...request });
      indexes.forEach((pairIndex, k) => (scores[pairIndex] = answer.values[k]));
      return answer;
    }),
  );
  return { scores, promptTokens: answers.reduce((sum, answer) => sum + answer.promptTokens, 0) };
}

/** vLLM's UsageInfo: a pooling request has no completion tokens. */
function usage(promptTokens: number) {
  return { prompt_tokens: promptTokens, total_tokens: promptTokens, completion_tokens: 0, prompt_tokens_details: null };
}

const now = (): number => Math.floor(Date.now() / 1000);

export function scoreResponse(scores: readonly number[], promptTokens: number, model: string) {
  return {
    id: `score-${randomUUID()}`,
    object: 'list' as const,
    created: now(),
    model,
    data: scores.map((score, index) => ({ index, object: 'score' as const, score })),
    usage: usage(promptTokens),
  };
}

/** vLLM's classify `input` (a text or a list of texts); token ids are refused, as TextEngine.predict takes texts. */
export function readClassifyInputs(body: Body): string[] {
  const inputs = aboutField('input', () => parseTextInputs(body.input, { field: 'input', allowEmptyString: false }));
  return inputs.map((input, i) => {
    if (typeof input !== 'string') throw new FieldError('input', `\`input${inputs.length > 1 ? `[${i}]` : ''}\` is token ids: /classify takes texts`);
    return input;
  });
}

/** vLLM's ClassificationData: the best label, and every label's probability in the model's label order. */
export function classifyResponse(answer: TextAnswer<ScoredLabel[]>, labels: readonly string[], model: string) {
  return {
    id: `classify-${randomUUID()}`,
    object: 'list' as const,
    created: now(),
    model,
    data: answer.values.map((scored, index) => {
      const order = labels.length > 0 ? labels : scored.map((entry) => entry.label);
      const byLabel = new Map(scored.map((entry) => [entry.label, entry.score]));
      return { index, label: scored[0]?.label ?? null, probs: order.map((label) => byLabel.get(label) ?? 0), num_classes: order.length };
    }),
    usage: usage(answer.promptTokens),
  };
}
