import { randomUUID } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { ServedGenerator } from '../../generation/text-generator.js';
import type { ErrorHandlingOptions } from './openai-errors.js';
import { FieldError } from './openai-fields.js';
import { IGNORED_FIELDS_HEADER, type RequestFields } from './request-fields.js';

/** What the chat and completions handlers share: the served generators and how errors are answered. */
export interface GenerationContext {
  readonly generators: readonly ServedGenerator[];
  readonly errors: ErrorHandlingOptions;
}

/** OpenAI's response ids: a prefix (`chatcmpl-`, `cmpl-`) and a random part. */
export function responseId(prefix: string): string {
  return `${prefix}${randomUUID().replaceAll('-', '')}`;
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** Names the request's fields that nothing read in the answer's header (vLLM only logs them). */
export function reportIgnoredFields(reply: FastifyReply, fields: RequestFields): void {
  const ignored = fields.unread();
  if (ignored.length > 0) reply.header(IGNORED_FIELDS_HEADER, ignored.join(', '));
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export function usage(promptTokens: number, completionTokens: number): Usage {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

/** `stream_options` is valid only with `stream: true` (vLLM's 400); `include_usage` adds the usage chunk, `continuous_usage_stats` usage on every chunk. */
export function readStreamOptions(fields: RequestFields): { stream: boolean; includeUsage: boolean; continuousUsage: boolean } {
  const stream = fields.boolean('stream') ?? false;
  const options = fields.object('stream_options');
  if (options !== undefined && !stream) {
    throw new FieldError('stream_options', 'Stream options can only be defined when `stream=True`.');
  }
  return { stream, includeUsage: options?.include_usage === true, continuousUsage: options?.continuous_usage_stats === true };
}
