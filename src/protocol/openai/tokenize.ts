import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TextGenerator } from '../../generation/text-generator.js';
import { templateOf } from './chat-completions.js';
import { readChatRequest } from './chat-request.js';
import { pickGenerator } from './generation-choices.js';
import { reportIgnoredFields, type GenerationContext } from './generation-context.js';
import { FieldError } from './openai-fields.js';
import { RequestFields } from './request-fields.js';

/**
 * vLLM's POST /tokenize (vllm/entrypoints/serve/tokenize/protocol.py): the completion form
 * `{prompt, add_special_tokens = true}` or the chat form `{messages, add_generation_prompt = true,
 * continue_final_message, add_special_tokens = false, chat_template_kwargs, tools}`, both answering
 * `{count, max_model_len, tokens}` (and `token_strs` with `return_token_strs`). The chat form counts
 * exactly what a chat request's `usage.prompt_tokens` counts.
 */
export async function tokenize(request: FastifyRequest, reply: FastifyReply, ctx: GenerationContext): Promise<object> {
  const fields = new RequestFields(request.body);
  const served = pickGenerator(ctx.generators, fields.string('model'));
  let tokens: number[];
  if (fields.has('messages')) {
    const chat = readChatRequest(fields);
    const prompt = templateOf(served).render(chat);
    tokens = await served.tokenizer.encode(prompt, chat.addSpecialTokens);
  } else {
    const prompt = fields.string('prompt');
    if (prompt === undefined) throw new FieldError('prompt', '`prompt` or `messages` is required');
    tokens = await served.tokenizer.encode(prompt, fields.boolean('add_special_tokens') ?? true);
  }
  const strings = fields.boolean('return_token_strs') ? { token_strs: tokens.map((id) => served.tokenizer.tokenText(id) ?? null) } : {};
  reportIgnoredFields(reply, fields);
  return { count: tokens.length, max_model_len: served.generator.maxModelLen, tokens, ...strings };
}

/** vLLM's POST /detokenize: `{tokens}` → `{prompt}`; ids outside the vocabulary are a 400. */
export async function detokenize(request: FastifyRequest, reply: FastifyReply, ctx: GenerationContext): Promise<object> {
  const fields = new RequestFields(request.body);
  const served = pickGenerator(ctx.generators, fields.string('model'));
  const tokens = fields.integers('tokens');
  if (tokens === undefined) throw new FieldError('tokens', '`tokens` is required');
  checkVocabulary(served.generator, tokens);
  reportIgnoredFields(reply, fields);
  return { prompt: await served.tokenizer.decode(tokens, false) };
}

function checkVocabulary(generator: TextGenerator, tokens: readonly number[]): void {
  const outside = tokens.filter((id) => id >= generator.vocabSize);
  if (outside.length > 0) throw new FieldError('tokens', `Token id(s) ${outside.slice(0, 5).join(', ')} are outside the vocabulary (size ${generator.vocabSize}).`);
}
