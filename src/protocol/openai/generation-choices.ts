import { createError, ServeFnError } from '../../errors/index.js';
import { generationText, type TextPiece } from '../../generation/generation-text.js';
import type { SamplingParams, ServedGenerator, StructuredOutput, TextGenerator } from '../../generation/text-generator.js';
import type { AskedStructuredOutput } from './structured-output-fields.js';
import type { SamplingFields } from './sampling-fields.js';

/** The served generator a request names; the only one when it names none (vLLM's `model` is optional). */
export function pickGenerator(generators: readonly ServedGenerator[], name: string | undefined): ServedGenerator {
  const found = name === undefined ? generators[0] : generators.find((g) => g.generator.name === name);
  if (!found) throw Object.assign(createError('SF_ERR_GENERATION_MODEL_UNKNOWN', name ?? ''), { param: 'model' });
  return found;
}

/**
 * The too-long check vLLM makes before scheduling (its classic sentence, which clients match),
 * carrying llama.cpp's `n_prompt_tokens` and `n_ctx` so clients of either server can re-budget.
 */
export function checkContext(generator: TextGenerator, promptTokens: number, maxTokens: number): void {
  if (promptTokens + maxTokens <= generator.maxModelLen && promptTokens < generator.maxModelLen) return;
  const err = createError('SF_ERR_GENERATION_CONTEXT_EXCEEDED', generator.maxModelLen, maxTokens, promptTokens, promptTokens + maxTokens);
  throw Object.assign(err, { param: 'input_tokens', errorFields: { n_prompt_tokens: promptTokens, n_ctx: generator.maxModelLen } });
}

export interface ChoicesRequest {
  readonly requestId: string;
  readonly promptTokenIds: readonly number[];
  readonly sampling: SamplingParams;
  readonly fields: SamplingFields;
  readonly structured?: AskedStructuredOutput;
  readonly signal?: AbortSignal;
}

/**
 * Starts the request's `n` sequences, each with its own grammar matcher in the instance and, when seeded, the seed plus
 * its index (vLLM samples n sequences from one seeded generator, so they differ; equal seeds here
 * would make them equal). A structured output on a model without a grammar engine is a 400.
 */
export async function startChoices(served: ServedGenerator, request: ChoicesRequest): Promise<AsyncIterable<TextPiece>[]> {
  if (request.structured) await checkStructured(served, request.structured);
  const { sampling, fields } = request;
  const choices: AsyncIterable<TextPiece>[] = [];
  for (let i = 0; i < fields.n; i++) {
    const generation = served.generator.generate({
      requestId: fields.n === 1 ? request.requestId : `${request.requestId}-${i}`,
      promptTokenIds: request.promptTokenIds,
      sampling: sampling.seed === undefined || i === 0 ? sampling : { ...sampling, seed: sampling.seed + i },
      ...(request.structured ? { structuredOutput: request.structured.output } : {}),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    choices.push(
      generationText(generation, served.tokenizer, {
        promptTokenIds: request.promptTokenIds,
        stop: fields.stop,
        includeStopString: fields.includeStopString,
        skipSpecialTokens: fields.skipSpecialTokens,
        minTokens: sampling.minTokens,
      }),
    );
  }
  return choices;
}

async function checkStructured(served: ServedGenerator, asked: AskedStructuredOutput): Promise<void> {
  const check = served.structuredOutputs;
  if (!check) throw Object.assign(createError('SF_ERR_STRUCTURED_OUTPUT_UNSUPPORTED', served.generator.name, asked.field), { param: asked.field });
  try {
    await check(asked.output);
  } catch (err) {
    // The compiler's refusal of a schema or pattern is the request's fault: keep its 4xx, name the field.
    if (err instanceof ServeFnError && err.statusCode < 500) throw Object.assign(err, { param: asked.field });
    throw err;
  }
}

/** A structured output the tool choice implies, as a JSON schema constraint. */
export function jsonOutput(schema: object, field: string): AskedStructuredOutput {
  const output: StructuredOutput = { kind: 'json', schema };
  return { output, field };
}

/** Every choice's pieces as they come, interleaved, each with its choice's index (a stream of n > 1 choices). */
export async function* interleave(choices: readonly AsyncIterable<TextPiece>[]): AsyncGenerator<{ index: number; piece: TextPiece }> {
  const iterators = choices.map((c) => c[Symbol.asyncIterator]());
  const next = (index: number) => iterators[index].next().then((result) => ({ index, result }));
  const pending = new Map(iterators.map((_, i) => [i, next(i)] as const));
  try {
    while (pending.size > 0) {
      const { index, result } = await Promise.race(pending.values());
      if (result.done) {
        pending.delete(index);
        continue;
      }
      pending.set(index, next(index));
      yield { index, piece: result.value };
    }
  } finally {
    // A client that went away leaves the loop early: every sequence still running is ended.
    await Promise.allSettled(iterators.map((it) => it.return?.()));
  }
}
