import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TextPiece } from '../../generation/generation-text.js';
import type { PromptTokenizer, ServedGenerator } from '../../generation/text-generator.js';
import { disconnectSignal } from '../../server/disconnect-signal.js';
import { checkContext, interleave, pickGenerator, startChoices, type ChoicesRequest } from './generation-choices.js';
import { nowSeconds, readStreamOptions, reportIgnoredFields, responseId, usage, type GenerationContext } from './generation-context.js';
import { FieldError } from './openai-fields.js';
import { sendOpenAiStream } from './openai-sse.js';
import { RequestFields } from './request-fields.js';
import { checkLogprobsCount, readSamplingFields, resolveMaxTokens } from './sampling-fields.js';
import { readStructuredOutput } from './structured-output-fields.js';
import { appendCompletionLogprobs, emptyCompletionLogprobs, TokenStrings, type CompletionLogprobs } from './token-strings.js';

/** vLLM's completions default (`max_tokens: int | None = 16`, completion/protocol.py), which OpenAI's legacy API also had. */
export const COMPLETIONS_DEFAULT_MAX_TOKENS = 16;

interface Prompt {
  readonly text: string;
  readonly tokenIds: readonly number[];
}

/** OpenAI's `prompt`: a text, a list of texts, a list of token ids, or a list of id lists. */
async function readPrompts(fields: RequestFields, tokenizer: PromptTokenizer, addSpecialTokens: boolean): Promise<Prompt[]> {
  const raw = fields.take('prompt');
  const isIds = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((x) => Number.isSafeInteger(x) && x >= 0);
  let prompts: (string | number[])[];
  if (typeof raw === 'string') prompts = [raw];
  else if (isIds(raw)) prompts = [raw];
  else if (Array.isArray(raw) && raw.length > 0 && raw.every((p) => typeof p === 'string' || isIds(p))) prompts = raw as (string | number[])[];
  else throw new FieldError('prompt', '`prompt` must be a string, a list of strings, a list of token ids or a list of token-id lists');
  return Promise.all(
    prompts.map(async (p) => (typeof p === 'string' ? { text: p, tokenIds: await tokenizer.encode(p, addSpecialTokens) } : { text: await tokenizer.decode(p, false), tokenIds: p })),
  );
}

/** POST /v1/completions (https://platform.openai.com/docs/api-reference/completions/create, vLLM's fields). */
export async function completion(request: FastifyRequest, reply: FastifyReply, ctx: GenerationContext): Promise<unknown> {
  const fields = new RequestFields(request.body);
  const served = pickGenerator(ctx.generators, fields.string('model'));
  const { generator, tokenizer } = served;
  const prompts = await readPrompts(fields, tokenizer, fields.boolean('add_special_tokens') ?? true);
  const streaming = readStreamOptions(fields);
  const logprobs = checkLogprobsCount('logprobs', fields.integer('logprobs'));
  const echo = fields.boolean('echo') ?? false;
  const structured = readStructuredOutput(fields, true);
  const samplingFields = readSamplingFields(fields, generator, { logprobs, ...(echo && logprobs !== undefined ? { promptLogprobs: logprobs } : {}) });
  const maxTokens = resolveMaxTokens(samplingFields.maxTokens, COMPLETIONS_DEFAULT_MAX_TOKENS, generator);
  if (maxTokens === 0 && !echo) throw new FieldError('max_tokens', 'max_tokens must be at least 1, got 0.');
  for (const prompt of prompts) checkContext(generator, prompt.tokenIds.length, maxTokens);
  reportIgnoredFields(reply, fields);

  const answer = new CompletionAnswer(served, prompts, samplingFields.n, logprobs, echo);
  const disconnect = disconnectSignal(reply);
  try {
    // vLLM's echo with max_tokens 0 answers the prompt alone, without generating.
    const choices =
      maxTokens === 0
        ? prompts.flatMap(() => Array.from({ length: samplingFields.n }, () => echoOnly()))
        : await startEveryPrompt(served, prompts, { requestId: request.id, sampling: { ...samplingFields.sampling, maxTokens }, fields: samplingFields, ...(structured ? { structured } : {}), signal: disconnect.signal });
    // A stream keeps watching the connection for as long as it is written.
    if (streaming.stream) return sendOpenAiStream(request, reply, answer.chunks(choices, streaming), ctx.errors);
    return await answer.whole(choices);
  } finally {
    if (!streaming.stream) disconnect.release();
  }
}

/** Each prompt's n choices, in vLLM's order (prompt by prompt). */
async function startEveryPrompt(served: ServedGenerator, prompts: readonly Prompt[], request: Omit<ChoicesRequest, 'promptTokenIds'>): Promise<AsyncIterable<TextPiece>[]> {
  const perPrompt = await Promise.all(
    prompts.map((prompt, p) => startChoices(served, { ...request, requestId: prompts.length === 1 ? request.requestId : `${request.requestId}-p${p}`, promptTokenIds: prompt.tokenIds })),
  );
  return perPrompt.flat();
}

async function* echoOnly(): AsyncGenerator<TextPiece> {
  yield { text: '', tokens: [], finishReason: 'length', stopReason: null };
}

/** One completions response; choice `i` answers prompt ⌊i / n⌋, as vLLM numbers them. */
class CompletionAnswer {
  private readonly id = responseId('cmpl-');
  private readonly created = nowSeconds();
  private readonly strings: TokenStrings;
  private completionTokens = 0;

  constructor(
    private readonly served: ServedGenerator,
    private readonly prompts: readonly Prompt[],
    private readonly n: number,
    private readonly logprobs: number | undefined,
    private readonly echo: boolean,
  ) {
    this.strings = new TokenStrings(served.tokenizer);
  }

  private get promptTokens(): number {
    return this.prompts.reduce((sum, p) => sum + p.tokenIds.length, 0);
  }

  private promptOf(index: number): Prompt {
    return this.prompts[Math.floor(index / this.n)];
  }

  async whole(choices: readonly AsyncIterable<TextPiece>[]): Promise<object> {
    // Through interleave, so that one failing choice ends the others' sequences too.
    const states = choices.map((_, index) => ({ ...this.choiceState(index), finish: 'stop', stopReason: null as string | number | null }));
    for await (const { index, piece } of interleave(choices)) {
      const state = states[index];
      await this.add(state, piece, index);
      if (piece.finishReason) [state.finish, state.stopReason] = [piece.finishReason, piece.stopReason ?? null];
    }
    const collected = states.map((state, index) => ({ index, text: state.text, logprobs: state.logprobs ?? null, finish_reason: state.finish, stop_reason: state.stopReason }));
    return { id: this.id, object: 'text_completion', created: this.created, model: this.served.generator.name, choices: collected, usage: usage(this.promptTokens, this.completionTokens), system_fingerprint: null };
  }

  private choiceState(index: number): { text: string; logprobs?: CompletionLogprobs; offset: number; echoed: boolean } {
    return { text: '', ...(this.logprobs === undefined ? {} : { logprobs: emptyCompletionLogprobs() }), offset: 0, echoed: !this.echo };
  }

  /** Adds a piece to a choice; returns the text (and logprobs) it added, the echoed prompt first. */
  private async add(state: ReturnType<CompletionAnswer['choiceState']>, piece: TextPiece, index: number): Promise<{ text: string; logprobs?: CompletionLogprobs }> {
    this.completionTokens += piece.tokens.length;
    let text = '';
    const added = this.logprobs === undefined ? undefined : emptyCompletionLogprobs();
    if (!state.echoed) {
      state.echoed = true;
      const prompt = this.promptOf(index);
      text += prompt.text;
      if (added) state.offset = await appendCompletionLogprobs(this.strings, added, piece.promptLogprobs ?? prompt.tokenIds.map(() => undefined), prompt.tokenIds, state.offset);
    }
    if (added) state.offset = await appendCompletionLogprobs(this.strings, added, piece.tokens, [], state.text.length + text.length);
    text += piece.text;
    state.text += text;
    if (added && state.logprobs) {
      for (const key of ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset'] as const) (state.logprobs[key] as unknown[]).push(...added[key]);
    }
    return { text, ...(added ? { logprobs: added } : {}) };
  }

  async *chunks(choices: readonly AsyncIterable<TextPiece>[], streaming: { includeUsage: boolean; continuousUsage: boolean }): AsyncGenerator<object> {
    const states = choices.map((_, index) => this.choiceState(index));
    const chunk = (choice: object[], withUsage: boolean) => ({
      id: this.id,
      object: 'text_completion',
      created: this.created,
      model: this.served.generator.name,
      choices: choice,
      ...(withUsage ? { usage: usage(this.promptTokens, this.completionTokens) } : {}),
    });
    for await (const { index, piece } of interleave(choices)) {
      const added = await this.add(states[index], piece, index);
      if (added.text === '' && !added.logprobs?.tokens.length && !piece.finishReason) continue;
      yield chunk(
        [{ index, text: added.text, logprobs: added.logprobs ?? null, finish_reason: piece.finishReason ?? null, stop_reason: piece.finishReason ? (piece.stopReason ?? null) : null }],
        streaming.continuousUsage,
      );
    }
    if (streaming.includeUsage) yield chunk([], true);
  }
}
