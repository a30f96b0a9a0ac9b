import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { fakeServedGenerator, qwen3Tokenizer, QWEN3_IM_END, type FakeGenerator } from '../helpers/fake-generator.js';
import { generationApp } from '../helpers/generation-app.js';

/**
 * The official openai SDK and LangChain's ChatOpenAI, unchanged, over loopback against the
 * generation routes with a scripted generator: what they send by default and how they read answers.
 * The script answers by the prompt: a tool call when tools were offered, else a fixed sentence.
 */
const tokenizer = await qwen3Tokenizer();
const SENTENCE = 'The capital of France is Paris.';
const sentence = [...(await tokenizer.encode(SENTENCE, false)), QWEN3_IM_END];
const call = [...(await tokenizer.encode('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', false)), QWEN3_IM_END];

let app: FastifyInstance;
let fake: FakeGenerator;
let base: string;
let client: OpenAI;
const sent: Record<string, unknown>[] = [];
const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

beforeAll(async () => {
  // Qwen3's template writes `<tool_call>` (one added token) into the system turn when tools are offered.
  const [toolCallToken] = await tokenizer.encode('<tool_call>', false);
  const served = await fakeServedGenerator((prompt) => (prompt.includes(toolCallToken) ? call : sentence));
  fake = served.generator;
  app = await generationApp([served], (setup) =>
    setup.addHook('preHandler', async (request) => {
      sent.push(request.body as Record<string, unknown>);
    }),
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  client = new OpenAI({ apiKey: 'test-key', baseURL: `${base}/v1`, maxRetries: 0 });
});

afterAll(() => app.close());

describe('openai SDK: chat.completions', () => {
  it('default options: one answer, finish_reason stop, usage', async () => {
    const res = await client.chat.completions.create({ model: 'fake-qwen3', messages: [{ role: 'user', content: 'Capital of France?' }] });
    expect(sent.at(-1)).toEqual({ model: 'fake-qwen3', messages: [{ role: 'user', content: 'Capital of France?' }] });
    expect(res.choices[0].message.content).toBe(SENTENCE);
    expect(res.choices[0].finish_reason).toBe('stop');
    expect(res.usage).toMatchObject({ completion_tokens: sentence.length, total_tokens: res.usage!.prompt_tokens + sentence.length });
  });

  it('streaming with include_usage: the deltas add up, the last chunk carries usage', async () => {
    const stream = await client.chat.completions.create({ model: 'fake-qwen3', messages: [{ role: 'user', content: 'Hi' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let last: OpenAI.Chat.Completions.ChatCompletionChunk | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      last = chunk;
    }
    expect(text).toBe(SENTENCE);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.completion_tokens).toBe(sentence.length);
  });

  it('logprobs with top_logprobs', async () => {
    const res = await client.chat.completions.create({ model: 'fake-qwen3', messages: [{ role: 'user', content: 'Hi' }], logprobs: true, top_logprobs: 3, max_completion_tokens: 4 });
    expect(res.choices[0].finish_reason).toBe('length');
    expect(res.choices[0].logprobs?.content).toHaveLength(4);
    expect(res.choices[0].logprobs?.content?.[0].top_logprobs).toHaveLength(3);
    expect(res.choices[0].logprobs?.content?.map((t) => t.token).join('')).toBe(await tokenizer.decode(sentence.slice(0, 4), true));
  });

  it('tools: tool_calls whole and through the SDK’s stream helper', async () => {
    const res = await client.chat.completions.create({ model: 'fake-qwen3', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools });
    expect(res.choices[0].finish_reason).toBe('tool_calls');
    expect(res.choices[0].message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
    const runner = client.chat.completions.stream({ model: 'fake-qwen3', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(final.choices[0].message.tool_calls?.[0]).toMatchObject({ function: { name: 'get_weather', arguments: '{"city":"Paris"}' } });
  });

  it("tool calls stream as vLLM's hermes parser sends them: the name first, then argument deltas the SDK's helper accumulates", async () => {
    const runner = client.chat.completions.stream({ model: 'fake-qwen3', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools });
    const argumentDeltas: string[] = [];
    runner.on('tool_calls.function.arguments.delta', (event) => argumentDeltas.push(event.arguments_delta));
    const toolChunks: OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    runner.on('chunk', (chunk) => toolChunks.push(...(chunk.choices[0]?.delta.tool_calls ?? [])));
    const final = await runner.finalChatCompletion();
    expect(toolChunks[0]).toMatchObject({ index: 0, type: 'function', id: expect.stringMatching(/^chatcmpl-tool-/), function: { name: 'get_weather' } });
    expect(toolChunks[0]!.function).not.toHaveProperty('arguments');
    expect(toolChunks.slice(1).every((d) => d.index === 0 && d.id === undefined && d.function?.name === undefined)).toBe(true);
    expect(argumentDeltas.length).toBeGreaterThan(1);
    expect(argumentDeltas.join('')).toBe('{"city":"Paris"}');
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    expect(final.choices[0].message.tool_calls).toEqual([expect.objectContaining({ id: toolChunks[0]!.id, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } })]);
  });

  it('errors reach the SDK as its typed errors', async () => {
    await expect(client.chat.completions.create({ model: 'other', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(NotFoundError);
    const bad = await client.chat.completions.create({ model: 'fake-qwen3', messages: [{ role: 'user', content: 'x' }], temperature: -1 }).catch((err: unknown) => err);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect((bad as BadRequestError).message).toMatch(/temperature must be non-negative/);
    expect((bad as BadRequestError).param).toBe('temperature');
  });
});

describe('openai SDK: completions', () => {
  it('non-stream and stream', async () => {
    const res = await client.completions.create({ model: 'fake-qwen3', prompt: 'Say:' , max_tokens: 64 });
    expect(res.choices[0].text).toBe(SENTENCE);
    const stream = await client.completions.create({ model: 'fake-qwen3', prompt: 'Say:', stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    // The default 16 tokens cut the sentence, or not, as the tokenizer counts it.
    expect(text).toBe(await tokenizer.decode(sentence.slice(0, 16), true));
  });
});

describe('LangChain ChatOpenAI', () => {
  const model = () => new ChatOpenAI({ model: 'fake-qwen3', apiKey: 'test-key', configuration: { baseURL: `${base}/v1` }, maxRetries: 0 });

  it('invoke and stream', async () => {
    const answer = await model().invoke('Capital of France?');
    expect(answer.content).toBe(SENTENCE);
    let text = '';
    for await (const chunk of await model().stream('Capital of France?')) text += chunk.content as string;
    expect(text).toBe(SENTENCE);
  });

  it('bindTools: tool_calls parsed into LangChain’s tool calls', async () => {
    const answer = await model().bindTools(tools).invoke('Weather in Paris?');
    expect(answer.tool_calls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'Paris' } })]);
  });
});

describe('a client that goes away', () => {
  it('aborts its generation', async () => {
    const before = fake.requests.length;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
      req.end(JSON.stringify({ prompt: 'Go on forever', stream: true, ignore_eos: true, max_tokens: 4000 }));
    });
    const request = fake.requests[before];
    await expect.poll(() => request.signal?.aborted, { timeout: 5000 }).toBe(true);
    await expect.poll(() => fake.finished, { timeout: 5000 }).toBe(fake.requests.length);
  });
});
