import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatTemplate } from '../../src/generation/chat-template.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { MODEL_FOLDER } from '../../examples/class-generator/index.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { writeDecoderFolder, type DecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { referenceGreedy } from '../helpers/decoder-reference.js';
import { startCli, type RunningCli } from './cli-harness.js';

/**
 * `serve-fn start <module>` on a module exporting the README's generator class
 * (examples/class-generator), with the tiny Qwen3 export as the folder beside it: the real CLI (the
 * built dist), the class's step hook on its worker instance. The openai SDK streams a chat
 * completion whose greedy tokens are the float64 reference's, and a constrained one whose JSON
 * validates; `/v1/models` lists the class and the `vllm:*` series name it.
 */
const root = scratchFolder('cli-generation-class');
const CLASS_NAME = 'qwen3-class';
const MAX_TOKENS = 6;
let folder: DecoderFolder;
let tokenizer: TextTokenizer;
let cli: RunningCli;
let client: OpenAI;

beforeAll(async () => {
  folder = writeDecoderFolder(join(root, MODEL_FOLDER));
  tokenizer = await TextTokenizer.fromFile(join(folder.dir, 'tokenizer.json'));
  // The class reads its folder from beside the module the CLI is given: a module here that re-exports the example.
  writeFileSync(join(root, 'index.ts'), `export { Qwen3Decoder } from ${JSON.stringify(new URL('../../examples/class-generator/index.ts', import.meta.url).href)};\n`);
  cli = await startCli(['start', join(root, 'index.ts'), '--host', '127.0.0.1']);
  await cli.waitForOutput(/serve-fn ready/, 90_000);
  client = new OpenAI({ apiKey: 'unused', baseURL: `${cli.base}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  if (cli) expect(await cli.stop()).toBe(0);
  rmSync(root, { recursive: true, force: true });
}, 60_000);

/** The prompt the server renders: the folder's chat template, then its tokenizer. */
async function chatPrompt(messages: { role: string; content: string }[]): Promise<number[]> {
  const config = JSON.parse(readFileSync(join(folder.dir, 'tokenizer_config.json'), 'utf8')) as { chat_template: string };
  const rendered = new ChatTemplate({ template: config.chat_template, eosToken: '<|im_end|>' }).render({ messages, addGenerationPrompt: true, continueFinalMessage: false });
  return Array.from((await tokenizer.encode(rendered, { addSpecialTokens: true })).ids);
}

/** A streamed chat completion folded back: its text, the finish reason, the usage chunk. */
async function streamed(body: Omit<OpenAI.Chat.ChatCompletionCreateParamsStreaming, 'model' | 'stream'>) {
  const stream = await client.chat.completions.create({ ...body, model: CLASS_NAME, stream: true, stream_options: { include_usage: true } } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
  let text = '';
  let finish: string | null | undefined;
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    usage = chunk.usage ?? usage;
  }
  return { text, finish, usage };
}

describe('openai SDK over serve-fn start <module with a @GenerativeModel class>', () => {
  it('lists the class on /v1/models with its context', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => [m.id, (m as unknown as { max_model_len: number }).max_model_len])).toEqual([[CLASS_NAME, 256]]);
  }, 60_000);

  it("streams a chat completion: the reference's greedy tokens, exact usage", async () => {
    const messages = [{ role: 'user', content: 'Capital of France?' }];
    const prompt = await chatPrompt(messages);
    const greedy = referenceGreedy(folder.weights, prompt, MAX_TOKENS);
    const end = greedy.findIndex((t) => folder.eosTokenIds.includes(t));
    const expected = end < 0 ? greedy : greedy.slice(0, end + 1);
    const res = await streamed({ messages: messages as OpenAI.Chat.ChatCompletionMessageParam[], temperature: 0, max_tokens: MAX_TOKENS });
    expect(res.text).toBe(await tokenizer.decode(expected, true));
    expect(res.finish).toBe(end < 0 ? 'length' : 'stop');
    expect(res.usage).toEqual(expect.objectContaining({ prompt_tokens: prompt.length, completion_tokens: expected.length, total_tokens: prompt.length + expected.length }));
  }, 120_000);

  it('streams a json_schema answer that validates', async () => {
    const schema = { type: 'object', properties: { city: { enum: ['Paris', 'Lyon', 'Nice'] }, capital: { type: 'boolean' } }, required: ['city', 'capital'], additionalProperties: false };
    const res = await streamed({
      messages: [{ role: 'user', content: 'Capital of France?' }], max_tokens: 64, seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
      chat_template_kwargs: { enable_thinking: false },
    } as Omit<OpenAI.Chat.ChatCompletionCreateParamsStreaming, 'model' | 'stream'>);
    expect(res.finish).toBe('stop');
    const validate = new Ajv().compile(schema);
    expect(validate(JSON.parse(res.text)), JSON.stringify(validate.errors)).toBe(true);
  }, 120_000);

  it("counts the class's requests under vLLM's series, named by the class", async () => {
    const metrics = await fetch(`${cli.base}/metrics`).then((r) => r.text());
    for (const series of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc', 'vllm:num_preemptions_total']) expect(metrics).toContain(`${series}{model_name="${CLASS_NAME}"} 0`);
    // The two streamed requests above, each ended by a stop token, the length or its grammar.
    const finished = [...metrics.matchAll(new RegExp(`^vllm:request_success_total\\{[^}]*model_name="${CLASS_NAME}"[^}]*\\} (\\d+)`, 'gm'))].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(finished).toBe(2);
    expect(metrics).toMatch(new RegExp(`^vllm:generation_tokens_total\\{model_name="${CLASS_NAME}"\\} [1-9]`, 'm'));
  }, 60_000);
});
