import type { FastifyReply, FastifyRequest } from 'fastify';
import { ChatTemplate } from '../../generation/chat-template.js';
import type { TextPiece } from '../../generation/generation-text.js';
import { reasoningStart } from '../../generation/reasoning-parser.js';
import type { ServedGenerator } from '../../generation/text-generator.js';
import { accumulateToolCalls, type ParsedToolCall, type ToolCallDelta } from '../../generation/tool-call-parser.js';
import { createError } from '../../errors/index.js';
import { disconnectSignal } from '../../server/disconnect-signal.js';
import { ChatChoice, type ChatChoiceOptions, type ChatDelta } from './chat-choice.js';
import { readChatRequest, toolChoiceSchema, type ChatRequest } from './chat-request.js';
import { checkContext, interleave, jsonOutput, pickGenerator, startChoices } from './generation-choices.js';
import { nowSeconds, readStreamOptions, reportIgnoredFields, responseId, usage, type GenerationContext } from './generation-context.js';
import { FieldError } from './openai-fields.js';
import { sendOpenAiStream } from './openai-sse.js';
import { RequestFields } from './request-fields.js';
import { readSamplingFields, resolveMaxTokens } from './sampling-fields.js';
import { readStructuredOutput } from './structured-output-fields.js';
import { chatLogprobs, TokenStrings, type ChatTokenLogprob } from './token-strings.js';

const templates = new WeakMap<ServedGenerator, ChatTemplate>();

/** The model's parsed chat template (once per model); a 400 for a model without one. */
export function templateOf(served: ServedGenerator): ChatTemplate {
  let template = templates.get(served);
  if (!template) {
    if (!served.chatTemplate) throw createError('SF_ERR_CHAT_TEMPLATE_MISSING', served.generator.name);
    template = new ChatTemplate(served.chatTemplate);
    templates.set(served, template);
  }
  return template;
}

function toolCallsJson(calls: readonly ParsedToolCall[]) {
  return calls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } }));
}

/** A streamed call's piece as vLLM sends it: `{index, id, type, function: {name}}` first, then `{index, function: {arguments}}`. */
function toolCallDeltaJson(delta: ToolCallDelta) {
  const fn = { ...(delta.name !== undefined ? { name: delta.name } : {}), ...(delta.arguments !== undefined ? { arguments: delta.arguments } : {}) };
  return { index: delta.index, ...(delta.id !== undefined ? { id: delta.id, type: 'function' as const } : {}), function: fn };
}

/**
 * POST /v1/chat/completions (https://platform.openai.com/docs/api-reference/chat/create, with vLLM's
 * extra fields and checks: https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html).
 */
export async function chatCompletion(request: FastifyRequest, reply: FastifyReply, ctx: GenerationContext): Promise<unknown> {
  const fields = new RequestFields(request.body);
  const served = pickGenerator(ctx.generators, fields.string('model'));
  const { generator, tokenizer } = served;
  const chat = readChatRequest(fields);
  const streaming = readStreamOptions(fields);
  const asked = readStructuredOutput(fields, false);
  const forced = toolChoiceSchema(chat.toolChoice, chat.tools);
  if (forced && asked) throw new FieldError('tool_choice', 'Cannot use structured outputs together with a `required` or named `tool_choice`.');
  const structured = forced ? jsonOutput(forced, 'tool_choice') : asked;
  const samplingFields = readSamplingFields(fields, generator, { logprobs: chat.logprobs });
  if (samplingFields.maxTokens === 0) throw new FieldError(fields.has('max_completion_tokens') ? 'max_completion_tokens' : 'max_tokens', 'max_tokens must be at least 1, got 0.');

  const template = templateOf(served);
  const prompt = template.render({ ...chat, kwargs: chat.kwargs });
  const promptTokenIds = await tokenizer.encode(prompt, chat.addSpecialTokens);
  const maxTokens = resolveMaxTokens(samplingFields.maxTokens, generator.maxModelLen - promptTokenIds.length, generator);
  checkContext(generator, promptTokenIds.length, maxTokens);
  reportIgnoredFields(reply, fields);

  const choiceOptions: ChatChoiceOptions = {
    ...(template.writesThinking ? { reasoningStart: reasoningStart(prompt) } : {}),
    parseToolCalls: chat.toolChoice.kind === 'auto' && template.writesToolCalls,
    ...(forced ? { forcedTools: chat.toolChoice } : {}),
  };
  const disconnect = disconnectSignal(reply);
  try {
    const choices = await startChoices(served, {
      requestId: request.id,
      promptTokenIds,
      sampling: { ...samplingFields.sampling, maxTokens },
      fields: samplingFields,
      ...(structured ? { structured } : {}),
      signal: disconnect.signal,
    });
    const answer = new ChatAnswer(served, chat, choiceOptions, promptTokenIds.length, choices.length);
    // A stream keeps watching the connection for as long as it is written.
    if (streaming.stream) return sendOpenAiStream(request, reply, answer.chunks(choices, streaming), ctx.errors);
    return await answer.whole(choices);
  } finally {
    if (!streaming.stream) disconnect.release();
  }
}

interface Collected {
  reasoning: string;
  content: string;
  calls: ToolCallDelta[];
  logprobs: ChatTokenLogprob[];
  finish: string;
  stopReason: string | number | null;
}

/** The response of one chat request, whole or as a stream of chunks. */
class ChatAnswer {
  private readonly id = responseId('chatcmpl-');
  private readonly created = nowSeconds();
  private readonly strings: TokenStrings;
  private completionTokens = 0;

  constructor(
    private readonly served: ServedGenerator,
    private readonly chat: ChatRequest,
    private readonly options: ChatChoiceOptions,
    private readonly promptTokens: number,
    private readonly n: number,
  ) {
    this.strings = new TokenStrings(served.tokenizer);
  }

  /** vLLM's chat `echo`: the last message's content leads the answer when it is the assistant's own (a continued turn). */
  private get echoed(): string {
    const last = this.chat.messages.at(-1);
    return this.chat.echo && last?.role === 'assistant' ? last.content : '';
  }

  private async logprobsOf(piece: TextPiece): Promise<ChatTokenLogprob[] | undefined> {
    return this.chat.logprobs === undefined ? undefined : chatLogprobs(this.strings, piece.tokens);
  }

  async whole(choices: readonly AsyncIterable<TextPiece>[]): Promise<object> {
    const collected = await this.collect(choices);
    return {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.served.generator.name,
      choices: collected.map((c, index) => ({
        index,
        message: {
          role: 'assistant',
          content: c.content === '' && c.calls.length > 0 ? null : this.echoed + c.content,
          refusal: null,
          ...(this.options.reasoningStart && this.chat.includeReasoning ? { reasoning: c.reasoning || null, reasoning_content: c.reasoning || null } : {}),
          ...(c.calls.length > 0 ? { tool_calls: toolCallsJson(accumulateToolCalls(c.calls)) } : {}),
        },
        logprobs: this.chat.logprobs === undefined ? null : { content: c.logprobs },
        finish_reason: c.finish,
        stop_reason: c.stopReason,
      })),
      usage: usage(this.promptTokens, this.completionTokens),
      system_fingerprint: null,
    };
  }

  /** Every choice's output; through interleave, so that one failing choice ends the others' sequences too. */
  private async collect(choices: readonly AsyncIterable<TextPiece>[]): Promise<Collected[]> {
    const parsers = choices.map(() => new ChatChoice(this.options));
    const out: Collected[] = choices.map(() => ({ reasoning: '', content: '', calls: [], logprobs: [], finish: 'stop', stopReason: null }));
    for await (const { index, piece } of interleave(choices)) {
      this.completionTokens += piece.tokens.length;
      const delta = parsers[index].push(piece);
      const into = out[index];
      into.reasoning += delta.reasoning;
      into.content += delta.content;
      into.calls.push(...delta.toolCalls);
      const logprobs = await this.logprobsOf(piece);
      if (logprobs) into.logprobs.push(...logprobs);
      if (piece.finishReason) {
        into.finish = parsers[index].finishReason(piece.finishReason);
        into.stopReason = piece.stopReason ?? null;
      }
    }
    return out;
  }

  private chunk(choices: object[], withUsage: boolean): object {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.served.generator.name,
      choices,
      ...(withUsage ? { usage: usage(this.promptTokens, this.completionTokens) } : {}),
    };
  }

  /** vLLM's order: every choice's role chunk, then deltas as they come, each choice's finish, the usage chunk (include_usage). */
  async *chunks(choices: readonly AsyncIterable<TextPiece>[], streaming: { includeUsage: boolean; continuousUsage: boolean }): AsyncGenerator<object> {
    const perChoice = choices.map(() => ({ parser: new ChatChoice(this.options) }));
    for (let index = 0; index < this.n; index++) {
      yield this.chunk([{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], streaming.continuousUsage);
      if (this.echoed) yield this.chunk([{ index, delta: { content: this.echoed }, logprobs: null, finish_reason: null }], streaming.continuousUsage);
    }
    for await (const { index, piece } of interleave(choices)) {
      this.completionTokens += piece.tokens.length;
      const state = perChoice[index];
      const delta = state.parser.push(piece);
      const logprobs = await this.logprobsOf(piece);
      const body = this.deltaBody(delta);
      if (Object.keys(body).length === 0 && !logprobs?.length && !piece.finishReason) continue;
      const finish = piece.finishReason ? { finish_reason: state.parser.finishReason(piece.finishReason), stop_reason: piece.stopReason ?? null } : { finish_reason: null };
      yield this.chunk([{ index, delta: body, logprobs: logprobs ? { content: logprobs } : null, ...finish }], streaming.continuousUsage);
    }
    if (streaming.includeUsage) yield this.chunk([], true);
  }

  private deltaBody(delta: ChatDelta): Record<string, unknown> {
    const body: Record<string, unknown> = {};
    if (delta.reasoning && this.chat.includeReasoning) {
      body.reasoning = delta.reasoning;
      body.reasoning_content = delta.reasoning;
    }
    if (delta.content) body.content = delta.content;
    if (delta.toolCalls.length > 0) body.tool_calls = delta.toolCalls.map(toolCallDeltaJson);
    return body;
  }
}
