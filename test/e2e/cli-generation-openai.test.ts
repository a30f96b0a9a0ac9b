import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../src/generation/chat-template.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { writeDecoderFolder, type DecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { referenceGreedy, referenceLogits } from '../helpers/decoder-reference.js';
import { startCli, type RunningCli } from './cli-harness.js';

/**
 * The official openai SDK against `serve-fn start <tiny Qwen3 folder>`: the real CLI, the folder's
 * tokenizer and chat template, the iteration scheduler and the ONNX decoder on its worker. Greedy
 * (temperature 0) tokens must be the independent float64 reference's argmax continuation of the
 * rendered prompt, and usage must count exactly those tokens.
 */
const root = scratchFolder('cli-generation-openai');
const MAX_TOKENS = 6;
let folder: DecoderFolder;
let tokenizer: TextTokenizer;
let cli: RunningCli;
let client: OpenAI;

beforeAll(async () => {
  folder = writeDecoderFolder(join(root, 'qwen3-tiny'));
  tokenizer = await TextTokenizer.fromFile(join(folder.dir, 'tokenizer.json'));
  cli = await startCli(['start', folder.dir, '--host', '127.0.0.1', '--served-model-name', 'tiny-chat']);
  await cli.waitForOutput(/serve-fn ready/, 90_000);
  client = new OpenAI({ apiKey: 'unused', baseURL: `${cli.base}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  if (cli) expect(await cli.stop()).toBe(0);
  rmSync(root, { recursive: true, force: true });
}, 60_000);

/** The reference's greedy tokens, cut after the first end-of-sequence token as the server stops there. */
function expectedTokens(prompt: readonly number[]): number[] {
  const tokens = referenceGreedy(folder.weights, prompt, MAX_TOKENS);
  const end = tokens.findIndex((t) => folder.eosTokenIds.includes(t));
  return end < 0 ? tokens : tokens.slice(0, end + 1);
}

/** The reference's log-probability of each generated token (log-softmax of its position's logits). */
function referenceLogprobs(prompt: readonly number[], generated: readonly number[]): number[] {
  const rows = referenceLogits(folder.weights, [...prompt, ...generated]);
  return generated.map((token, i) => {
    const row = rows[prompt.length - 1 + i]!;
    const max = Math.max(...row);
    const logSum = Math.log(row.reduce((sum, v) => sum + Math.exp(v - max), 0)) + max;
    return row[token]! - logSum;
  });
}

/** Each token's text as the logprobs fields write it (one id decoded alone, special tokens kept). */
function tokenStrings(ids: readonly number[]): Promise<string[]> {
  return Promise.all(ids.map((id) => tokenizer.decode([id], false)));
}

async function chatPrompt(messages: { role: string; content: string }[]): Promise<number[]> {
  const config = JSON.parse(readFileSync(join(folder.dir, 'tokenizer_config.json'), 'utf8')) as { chat_template: string };
  const rendered = new ChatTemplate({ template: config.chat_template, eosToken: '<|im_end|>' }).render({ messages, addGenerationPrompt: true, continueFinalMessage: false });
  return Array.from((await tokenizer.encode(rendered, { addSpecialTokens: true })).ids);
}

describe('openai SDK over serve-fn start <tiny Qwen3 folder>', () => {
  const messages = [{ role: 'user', content: 'Capital of France?' }];

  it('chat.completions at temperature 0: the reference greedy tokens, exact usage', async () => {
    const prompt = await chatPrompt(messages);
    const expected = expectedTokens(prompt);
    const res = await client.chat.completions.create({ model: 'tiny-chat', messages: messages as OpenAI.Chat.ChatCompletionMessageParam[], temperature: 0, max_tokens: MAX_TOKENS, logprobs: true });
    const choice = res.choices[0]!;
    expect(choice.logprobs!.content!.map((t) => t.token)).toEqual(await tokenStrings(expected));
    // The served float32 logits agree with the float64 reference to float32 accuracy.
    const want = referenceLogprobs(prompt, expected);
    choice.logprobs!.content!.forEach((t, i) => expect(t.logprob).toBeCloseTo(want[i]!, 3));
    expect(choice.finish_reason).toBe(expected.length < MAX_TOKENS ? 'stop' : 'length');
    expect(res.usage).toEqual(expect.objectContaining({ prompt_tokens: prompt.length, completion_tokens: expected.length, total_tokens: prompt.length + expected.length }));
  }, 120_000);

  it('streamed chat.completions: the same tokens in deltas, usage on the last chunk', async () => {
    const prompt = await chatPrompt(messages);
    const expected = expectedTokens(prompt);
    const stream = await client.chat.completions.create({ model: 'tiny-chat', messages: messages as OpenAI.Chat.ChatCompletionMessageParam[], temperature: 0, max_tokens: MAX_TOKENS, logprobs: true, stream: true, stream_options: { include_usage: true } });
    const tokens: string[] = [];
    let usage: OpenAI.CompletionUsage | undefined | null;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      for (const t of chunk.choices[0]?.logprobs?.content ?? []) tokens.push(t.token);
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(tokens).toEqual(await tokenStrings(expected));
    expect(finish).toBe(expected.length < MAX_TOKENS ? 'stop' : 'length');
    expect(usage).toEqual(expect.objectContaining({ prompt_tokens: prompt.length, completion_tokens: expected.length, total_tokens: prompt.length + expected.length }));
  }, 120_000);

  it('completions at temperature 0: the reference greedy continuation of the raw prompt', async () => {
    const prompt = Array.from((await tokenizer.encode('The capital of France is', { addSpecialTokens: true })).ids);
    const expected = expectedTokens(prompt);
    const res = await client.completions.create({ model: 'tiny-chat', prompt: 'The capital of France is', temperature: 0, max_tokens: MAX_TOKENS, logprobs: 0 });
    expect(res.choices[0]!.logprobs!.tokens).toEqual(await tokenStrings(expected));
    expect(res.usage).toEqual(expect.objectContaining({ prompt_tokens: prompt.length, completion_tokens: expected.length, total_tokens: prompt.length + expected.length }));
  }, 120_000);

  it('response_format json_schema: the random weights still answer JSON that validates', async () => {
    // A finite schema (an enum, a boolean, a closed object) so the grammar ends within max_tokens whatever the model prefers.
    const schema = { type: 'object', properties: { city: { enum: ['Paris', 'Lyon', 'Nice'] }, capital: { type: 'boolean' } }, required: ['city', 'capital'], additionalProperties: false };
    const res = await client.chat.completions.create({
      model: 'tiny-chat', messages: messages as OpenAI.Chat.ChatCompletionMessageParam[], max_tokens: 64, seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
      // Thinking off: the whole answer is the constrained JSON (vLLM constrains from the first token too).
      chat_template_kwargs: { enable_thinking: false },
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe('stop');
    const answer = JSON.parse(choice.message.content!) as unknown;
    const validate = new Ajv().compile(schema);
    expect(validate(answer), JSON.stringify(validate.errors)).toBe(true);
  }, 120_000);
});
