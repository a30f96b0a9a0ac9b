import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/index.js';
import { MODEL_FOLDER, Qwen3Decoder } from '../../examples/class-generator/index.js';
import { writeDecoderFolder } from '../fixtures/generation/decoder-folders.js';

/**
 * Structured outputs from a @GenerativeModel class: the tiny Qwen3 export served by one server as a
 * folder (no code) and behind the README's example class, whose step hook runs the same ONNX file.
 * The class's instance masks with the folder's tokenizer.json through the same grammar engine, so
 * the official openai SDK gets the same constrained answer from both, streamed or not, and the same
 * 400 for a schema xgrammar refuses.
 */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-class-structured-'));
const FOLDER_NAME = MODEL_FOLDER;
const CLASS_NAME = 'qwen3-class';
let server: ServeFnServer;
let client: OpenAI;
/** vLLM's tool_choice "required" schema is an array with no maxItems; greedy random weights would add items until max_tokens. */
let closeArray: Asked;

beforeAll(async () => {
  // A context past the tiny tokenizer's long tool prompt (Qwen3's template writes the tools' schemas into it).
  const folder = writeDecoderFolder(join(root, MODEL_FOLDER), { shape: { maxPositions: 1024 } });
  writeFileSync(join(root, 'index.ts'), `export { Qwen3Decoder } from ${JSON.stringify(new URL('../../examples/class-generator/index.ts', import.meta.url).href)};\n`);
  server = new ServeFnServer({ models: [Qwen3Decoder], moduleUrl: pathToFileURL(join(root, 'index.ts')).href, generativeFolders: [folder.dir], collectProcessMetrics: false });
  const address = await server.listen(0, '127.0.0.1');
  client = new OpenAI({ apiKey: 'test-key', baseURL: `${address}/v1`, maxRetries: 0 });
  // So `]` is taken wherever the grammar allows it (the mask still forbids it elsewhere): one call, then the array ends.
  const ids = await server.generators.find((g) => g.generator.name === FOLDER_NAME)!.tokenizer.encode(']', false);
  expect(ids).toHaveLength(1);
  closeArray = { logit_bias: { [ids[0]!]: 100 } };
}, 120_000);
afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Capital of France?' }];
// A finite schema (an enum, a boolean, a closed object), so the grammar ends within max_tokens whatever the random weights prefer.
const schema = { type: 'object', properties: { city: { enum: ['Paris', 'Lyon', 'Nice'] }, capital: { type: 'boolean' } }, required: ['city', 'capital'], additionalProperties: false };
const weatherParameters = { type: 'object', properties: { city: { enum: ['Paris', 'Rome'] } }, required: ['city'], additionalProperties: false };
const tools: OpenAI.Chat.ChatCompletionFunctionTool[] = [{ type: 'function', function: { name: 'get_weather', parameters: weatherParameters } }];
// Greedy, and thinking off: the whole answer is the constrained output (vLLM constrains from the first token too).
const common = { messages, temperature: 0, max_tokens: 64, chat_template_kwargs: { enable_thinking: false } };

type Asked = Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'model' | 'messages'>;

const ask = (model: string, body: Asked) => client.chat.completions.create({ ...common, ...body, model } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);

/** A stream folded back into what a non-streamed answer says: content, tool calls by index, finish reason, usage. */
async function askStreamed(model: string, body: Asked) {
  const stream = await client.chat.completions.create({ ...common, ...body, model, stream: true, stream_options: { include_usage: true } } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
  let content = '';
  const calls: { name: string; arguments: string }[] = [];
  let finish: string | null | undefined;
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    content += choice?.delta.content ?? '';
    for (const call of choice?.delta.tool_calls ?? []) {
      const at = (calls[call.index] ??= { name: '', arguments: '' });
      at.name += call.function?.name ?? '';
      at.arguments += call.function?.arguments ?? '';
    }
    finish = choice?.finish_reason ?? finish;
    usage = chunk.usage ?? usage;
  }
  return { content, calls, finish, usage };
}

const callsOf = (res: OpenAI.Chat.ChatCompletion) =>
  (res.choices[0]!.message.tool_calls ?? []).map((c) => (c.type === 'function' ? { name: c.function.name, arguments: c.function.arguments } : { name: `custom ${c.custom.name}`, arguments: c.custom.input }));

describe('structured outputs from a @GenerativeModel class, as from its folder (openai SDK)', () => {
  const jsonSchema: Asked = { response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } } };

  it('response_format json_schema: the class answers what the folder answers, JSON that validates', async () => {
    const [byFolder, byClass] = [await ask(FOLDER_NAME, jsonSchema), await ask(CLASS_NAME, jsonSchema)];
    expect(byClass.choices[0]!.message.content).toBe(byFolder.choices[0]!.message.content);
    expect(byClass.choices[0]!.finish_reason).toBe('stop');
    expect(byFolder.choices[0]!.finish_reason).toBe('stop');
    expect(byClass.usage).toEqual(byFolder.usage);
    const validate = new Ajv().compile(schema);
    expect(validate(JSON.parse(byClass.choices[0]!.message.content!)), JSON.stringify(validate.errors)).toBe(true);
  }, 120_000);

  it('response_format json_schema, streamed: the same deltas from both, and the non-streamed answer', async () => {
    const [byFolder, byClass] = await Promise.all([askStreamed(FOLDER_NAME, jsonSchema), askStreamed(CLASS_NAME, jsonSchema)]);
    expect(byClass).toEqual(byFolder);
    expect(byClass.content).toBe((await ask(CLASS_NAME, jsonSchema)).choices[0]!.message.content);
    expect(byClass.finish).toBe('stop');
  }, 120_000);

  it('tool_choice "required": the class calls what the folder calls, with arguments that validate', async () => {
    const required: Asked = { tools, tool_choice: 'required', ...closeArray };
    const [byFolder, byClass] = [await ask(FOLDER_NAME, required), await ask(CLASS_NAME, required)];
    expect(callsOf(byClass)).toEqual(callsOf(byFolder));
    expect(byClass.choices[0]!.finish_reason).toBe(byFolder.choices[0]!.finish_reason);
    expect(byClass.choices[0]!.finish_reason).toBe('tool_calls');
    expect(byClass.usage).toEqual(byFolder.usage);
    const calls = callsOf(byClass);
    expect(calls.length).toBeGreaterThan(0);
    const validate = new Ajv().compile(weatherParameters);
    for (const call of calls) {
      expect(call.name).toBe('get_weather');
      expect(validate(JSON.parse(call.arguments)), JSON.stringify(validate.errors)).toBe(true);
    }
  }, 120_000);

  it('tool_choice "required", streamed: the same calls from both, and the non-streamed ones', async () => {
    const required: Asked = { tools, tool_choice: 'required', ...closeArray };
    const [byFolder, byClass] = await Promise.all([askStreamed(FOLDER_NAME, required), askStreamed(CLASS_NAME, required)]);
    expect(byClass).toEqual(byFolder);
    expect(byClass.calls.length).toBeGreaterThan(0);
    expect(byClass.finish).toBe('tool_calls');
    expect(byClass.calls).toEqual(callsOf(await ask(CLASS_NAME, required)));
  }, 120_000);

  it("a schema xgrammar refuses is the folder's 400, in OpenAI's error shape", async () => {
    const bad: Asked = { response_format: { type: 'json_schema', json_schema: { name: 'bad', schema: { type: 'objekt' } } } };
    const refusal = async (model: string, stream: boolean) => {
      const error = await (stream ? askStreamed(model, bad) : ask(model, bad)).then(() => undefined, (err: unknown) => err);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      const api = error as InstanceType<typeof OpenAI.APIError>;
      return { status: api.status, error: api.error };
    };
    const byFolder = await refusal(FOLDER_NAME, false);
    expect(byFolder.status).toBe(400);
    expect(byFolder.error).toMatchObject({ param: 'response_format', code: 400 });
    expect((byFolder.error as { message: string }).message).toMatch(/objekt/);
    expect(await refusal(CLASS_NAME, false)).toEqual(byFolder);
    expect(await refusal(CLASS_NAME, true)).toEqual(byFolder);
    // The class goes on serving constrained requests after the refusal.
    expect((await ask(CLASS_NAME, jsonSchema)).choices[0]!.finish_reason).toBe('stop');
  }, 120_000);
});
