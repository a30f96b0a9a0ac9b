import { afterAll, describe, expect, it } from 'vitest';
import { fakeServedGenerator, qwen3Tokenizer, QWEN3_IM_END, recordingCompiler, type Script } from '../helpers/fake-generator.js';
import { generationApp, sseData } from '../helpers/generation-app.js';

const tokenizer = await qwen3Tokenizer();
const ids = (text: string) => tokenizer.encode(text, false);
const answer = async (text: string): Promise<Script> => {
  const out = [...(await ids(text)), QWEN3_IM_END];
  return () => out;
};
const USER = [{ role: 'user', content: 'What is the capital of France?' }];
const apps: { close(): Promise<unknown> }[] = [];
afterAll(() => Promise.all(apps.map((a) => a.close())));

async function serve(text: string, options: Parameters<typeof fakeServedGenerator>[1] = {}) {
  const served = await fakeServedGenerator(await answer(text), options);
  const app = await generationApp([served]);
  apps.push(app);
  const post = (url: string, payload: object) => app.inject({ method: 'POST', url, payload });
  return { served, app, post, fake: served.generator };
}

describe('POST /v1/chat/completions', () => {
  it('answers the scripted text with usage counting the rendered prompt, and the rest of the context as max_tokens', async () => {
    const { post, fake } = await serve('Paris.', { maxModelLen: 1000 });
    const res = await post('/v1/chat/completions', { model: 'fake-qwen3', messages: USER, chat_template_kwargs: { enable_thinking: false } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ object: 'chat.completion', model: 'fake-qwen3', choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.' }, finish_reason: 'stop', stop_reason: null, logprobs: null }] });
    expect(body.id).toMatch(/^chatcmpl-/);
    const counted = (await post('/tokenize', { messages: USER, chat_template_kwargs: { enable_thinking: false } })).json();
    expect(body.usage).toEqual({ prompt_tokens: counted.count, completion_tokens: (await ids('Paris.')).length + 1, total_tokens: counted.count + (await ids('Paris.')).length + 1 });
    expect(fake.requests[0].promptTokenIds).toEqual(counted.tokens);
    expect(fake.requests[0].sampling.maxTokens).toBe(1000 - counted.count);
    expect(fake.requests[0].sampling).toMatchObject({ temperature: 1, topP: 1, topK: 0, minP: 0, repetitionPenalty: 1 });
  });

  it('applies generation_config defaults where the request sets nothing, and the request over them', async () => {
    const { post, fake } = await serve('ok', { defaults: { temperature: 0.6, topK: 20, topP: 0.95, stopTokenIds: [7] } });
    await post('/v1/chat/completions', { messages: USER });
    expect(fake.requests[0].sampling).toMatchObject({ temperature: 0.6, topK: 20, topP: 0.95, stopTokenIds: [7] });
    await post('/v1/chat/completions', { messages: USER, temperature: 0, top_k: 5, stop_token_ids: [9], seed: 3, min_p: 0.1, presence_penalty: 1, frequency_penalty: -1, repetition_penalty: 1.2, logit_bias: { '15': 200 }, ignore_eos: true, min_tokens: 2, max_tokens: 5 });
    expect(fake.requests[1].sampling).toMatchObject({ temperature: 0, topK: 5, topP: 0.95, stopTokenIds: [7, 9], seed: 3, minP: 0.1, presencePenalty: 1, frequencyPenalty: -1, repetitionPenalty: 1.2, ignoreEos: true, minTokens: 2, maxTokens: 5 });
    expect([...fake.requests[1].sampling.logitBias!]).toEqual([[15, 100]]);
  });

  it('cuts at a stop string, stops the generation and reports it as stop_reason', async () => {
    const { post, fake } = await serve('one two three four five six seven');
    const res = (await post('/v1/chat/completions', { messages: USER, stop: [' four'] })).json();
    expect(res.choices[0]).toMatchObject({ message: { content: 'one two three' }, finish_reason: 'stop', stop_reason: ' four' });
    expect(res.usage.completion_tokens).toBeLessThan((await ids('one two three four five six seven')).length);
    await new Promise((r) => setTimeout(r, 20));
    expect(fake.finished).toBe(1);
    const kept = (await post('/v1/chat/completions', { messages: USER, stop: ' four', include_stop_str_in_output: true })).json();
    expect(kept.choices[0].message.content).toBe('one two three four');
  });

  it('max_tokens ends with length; n gives n choices with distinct seeds', async () => {
    const { post, fake } = await serve('a b c d e f g');
    const res = (await post('/v1/chat/completions', { messages: USER, max_tokens: 2, n: 2, seed: 10 })).json();
    expect(res.choices).toHaveLength(2);
    expect(res.choices.map((c: { finish_reason: string }) => c.finish_reason)).toEqual(['length', 'length']);
    expect(res.usage.completion_tokens).toBe(4);
    expect(fake.requests.map((r) => r.sampling.seed)).toEqual([10, 11]);
  });

  it('logprobs and top_logprobs in chat’s shape', async () => {
    const { post, fake } = await serve('Hi');
    const res = (await post('/v1/chat/completions', { messages: USER, logprobs: true, top_logprobs: 2 })).json();
    expect(fake.requests[0].sampling.logprobs).toBe(2);
    const content = res.choices[0].logprobs.content;
    expect(content[0]).toMatchObject({ token: 'Hi', logprob: -0.5, bytes: [72, 105] });
    expect(content[0].top_logprobs).toHaveLength(2);
    expect(content[0].top_logprobs[0]).toMatchObject({ token: 'Hi', logprob: -0.5 });
  });

  it('Qwen3 thinking: reasoning split from the answer for thinking on, off, and none emitted', async () => {
    const on = await serve('<think>\nThe user asks.\n</think>\n\nParis.');
    const thought = (await on.post('/v1/chat/completions', { messages: USER })).json().choices[0].message;
    expect(thought).toMatchObject({ content: 'Paris.', reasoning_content: 'The user asks.\n', reasoning: 'The user asks.\n' });
    const off = await serve('Paris. I think </think> so.');
    const plain = (await off.post('/v1/chat/completions', { messages: USER, chat_template_kwargs: { enable_thinking: false } })).json().choices[0].message;
    expect(plain).toMatchObject({ content: 'Paris. I think </think> so.', reasoning_content: null });
    const effort = (await off.post('/v1/chat/completions', { messages: USER, reasoning_effort: 'none' })).json().choices[0].message;
    expect(effort.content).toBe('Paris. I think </think> so.');
    const none = await serve('Paris.');
    expect((await none.post('/v1/chat/completions', { messages: USER })).json().choices[0].message).toMatchObject({ content: 'Paris.', reasoning_content: null });
  });

  it('Qwen3 tool calls become tool_calls with finish_reason tool_calls', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const { post, fake } = await serve('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>');
    const res = (await post('/v1/chat/completions', { messages: USER, tools, chat_template_kwargs: { enable_thinking: false } })).json();
    expect(res.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] } });
    expect(await tokenizer.decode(fake.requests[0].promptTokenIds, false)).toContain('<tools>');
    const none = (await post('/v1/chat/completions', { messages: USER, tools, tool_choice: 'none', chat_template_kwargs: { enable_thinking: false } })).json();
    expect(none.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: expect.stringContaining('<tool_call>') } });
  });

  it('echo leads with a continued assistant message', async () => {
    const { post } = await serve(' Paris.');
    const res = (await post('/v1/chat/completions', { messages: [...USER, { role: 'assistant', content: 'It is' }], echo: true, add_generation_prompt: false, continue_final_message: true })).json();
    expect(res.choices[0].message.content).toBe('It is Paris.');
  });
});

describe('streaming (SSE)', () => {
  it('chat: role chunk first, deltas, finish chunk, usage chunk with empty choices, [DONE]', async () => {
    const { post } = await serve('Hello there, world');
    const res = await post('/v1/chat/completions', { messages: USER, stream: true, stream_options: { include_usage: true }, chat_template_kwargs: { enable_thinking: false } });
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = sseData(res.body) as { choices: { delta: Record<string, unknown>; finish_reason: string | null }[]; usage?: object; object: string }[];
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ completion_tokens: (await ids('Hello there, world')).length + 1 });
    const finish = chunks.at(-2)!;
    expect(finish.choices[0].finish_reason).toBe('stop');
    expect(chunks.slice(1, -1).map((c) => c.choices[0].delta.content ?? '').join('')).toBe('Hello there, world');
    expect(chunks.slice(0, -2).every((c) => c.choices[0].finish_reason === null)).toBe(true);
  });

  it('continuous_usage_stats puts usage on every chunk; ignored fields are named on a stream too', async () => {
    const { post } = await serve('a b c');
    const res = await post('/v1/chat/completions', { messages: USER, stream: true, stream_options: { continuous_usage_stats: true }, service_tier: 'auto' });
    expect(res.headers['x-serve-fn-ignored-fields']).toBe('service_tier');
    const chunks = sseData(res.body).slice(0, -1) as { usage?: { completion_tokens: number } }[];
    expect(chunks.every((c) => c.usage !== undefined)).toBe(true);
    const counts = chunks.map((c) => c.usage!.completion_tokens);
    expect(counts).toEqual([...counts].sort((x, y) => x - y));
    expect(counts.at(-1)).toBe((await ids('a b c')).length + 1);
  });

  it('include_reasoning false drops the reasoning', async () => {
    const { post } = await serve('<think>\nhm\n</think>\n\nok');
    const message = (await post('/v1/chat/completions', { messages: USER, include_reasoning: false })).json().choices[0].message;
    expect(message.content).toBe('ok');
    expect(message).not.toHaveProperty('reasoning_content');
  });

  it('chat: stop strings are held back, never sent and taken back', async () => {
    const { post } = await serve('alpha beta gamma END delta');
    const events = sseData((await post('/v1/chat/completions', { messages: USER, stream: true, stop: ['END'], chat_template_kwargs: { enable_thinking: false } })).body);
    const text = (events.slice(0, -1) as { choices: { delta: { content?: string } }[] }[]).map((c) => c.choices[0].delta.content ?? '').join('');
    expect(text).toBe('alpha beta gamma ');
  });

  it('chat: reasoning and tool calls stream as their own deltas', async () => {
    const tools = [{ type: 'function', function: { name: 'now' } }];
    const { post } = await serve('<think>\nhm\n</think>\n\nSure.<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>');
    const chunks = sseData((await post('/v1/chat/completions', { messages: USER, stream: true, tools })).body).slice(0, -1) as { choices: { delta: Record<string, unknown>; finish_reason: string | null }[] }[];
    const deltas = chunks.map((c) => c.choices[0].delta);
    expect(deltas.map((d) => d.reasoning_content ?? '').join('')).toBe('hm\n');
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Sure.');
    // As vLLM's hermes parser streams a call: the name first, then the arguments in pieces.
    const calls = deltas.flatMap((d) => (d.tool_calls as { index: number; function: { arguments?: string } }[]) ?? []);
    expect(calls[0]).toEqual({ index: 0, id: expect.stringMatching(/^chatcmpl-tool-/), type: 'function', function: { name: 'now' } });
    expect(calls.slice(1).every((c) => Object.keys(c).join() === 'index,function' && c.index === 0)).toBe(true);
    expect(calls.map((c) => c.function.arguments ?? '').join('')).toBe('{}');
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe('tool_calls');
  });

  it('completions: text chunks, then the usage chunk and [DONE]', async () => {
    const { post } = await serve(' sat on the mat');
    const events = sseData((await post('/v1/completions', { prompt: 'The cat', stream: true, stream_options: { include_usage: true }, max_tokens: 50 })).body);
    const chunks = events.slice(0, -1) as { object: string; choices: { text: string; finish_reason: string | null }[]; usage?: { prompt_tokens: number } }[];
    expect(chunks.every((c) => c.object === 'text_completion')).toBe(true);
    expect(chunks.slice(0, -1).map((c) => c.choices[0].text).join('')).toBe(' sat on the mat');
    expect(chunks.at(-2)!.choices[0].finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: (await ids('The cat')).length } });
  });
});

describe('a failure after the stream began', () => {
  it('is sent as a data: {"error"} event, then [DONE]', async () => {
    const served = await fakeServedGenerator(() => []);
    served.generator.generate = () => {
      async function* failing() {
        yield { tokens: [{ tokenId: 9, logprob: -1 }] };
        throw new Error('the runtime fell over');
      }
      const chunks = failing();
      return { [Symbol.asyncIterator]: () => chunks, stop: () => undefined };
    };
    const app = await generationApp([served]);
    apps.push(app);
    const res = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { messages: USER, stream: true } });
    expect(res.statusCode).toBe(200);
    const events = sseData(res.body);
    expect(events.at(-1)).toBe('[DONE]');
    // A fault's message stays in the log; the body says only that the server failed.
    expect(events.at(-2)).toMatchObject({ error: { code: 500, type: 'Internal Server Error' } });
    expect(JSON.stringify(events.at(-2))).not.toContain('fell over');
  });
});

describe('POST /v1/completions', () => {
  it('defaults max_tokens to 16 and answers text_completion', async () => {
    const { post, fake } = await serve(' sat on the mat');
    const res = (await post('/v1/completions', { model: 'fake-qwen3', prompt: 'The cat' })).json();
    expect(fake.requests[0].sampling.maxTokens).toBe(16);
    expect(res).toMatchObject({ object: 'text_completion', choices: [{ index: 0, text: ' sat on the mat', finish_reason: 'stop' }] });
  });

  it('takes token ids and several prompts; choices are numbered prompt by prompt', async () => {
    const { post } = await serve('!');
    const res = (await post('/v1/completions', { prompt: [await ids('a'), await ids('b')], n: 2 })).json();
    expect(res.choices.map((c: { index: number }) => c.index)).toEqual([0, 1, 2, 3]);
    expect(res.usage.prompt_tokens).toBe(2);
  });

  it('echo with logprobs: the prompt’s tokens first, its first token without a logprob', async () => {
    const { post, fake } = await serve(' world');
    const res = (await post('/v1/completions', { prompt: 'Hello', echo: true, logprobs: 1, max_tokens: 1 })).json();
    expect(fake.requests[0].sampling).toMatchObject({ logprobs: 1, promptLogprobs: 1 });
    const choice = res.choices[0];
    expect(choice.text).toBe('Hello world');
    expect(choice.logprobs.tokens).toEqual(['Hello', ' world']);
    expect(choice.logprobs.token_logprobs).toEqual([null, -0.5]);
    expect(choice.logprobs.top_logprobs).toEqual([null, { ' world': -0.5 }]);
    expect(choice.logprobs.text_offset).toEqual([0, 5]);
  });

  it('echo with max_tokens 0 answers the prompt without generating', async () => {
    const { post, fake } = await serve('x');
    const res = (await post('/v1/completions', { prompt: 'Just this', echo: true, max_tokens: 0 })).json();
    expect(res.choices[0].text).toBe('Just this');
    expect(fake.requests).toHaveLength(0);
  });
});

describe('structured outputs', () => {
  it('response_format, structured_outputs and the removed guided_* fields reach the grammar engine', async () => {
    const compiler = recordingCompiler();
    const { post, fake } = await serve('{}', { structuredOutputs: compiler });
    const schema = { type: 'object', properties: { a: { type: 'integer' } } };
    expect((await post('/v1/chat/completions', { messages: USER, response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } })).statusCode).toBe(200);
    await post('/v1/chat/completions', { messages: USER, response_format: { type: 'json_object' } });
    await post('/v1/completions', { prompt: 'x', structured_outputs: { regex: '[a-z]+' } });
    await post('/v1/completions', { prompt: 'x', guided_choice: ['yes', 'no'] });
    const legacy = await post('/v1/completions', { prompt: 'x', guided_json: JSON.stringify(schema), guided_decoding_backend: 'xgrammar' });
    await post('/v1/completions', { prompt: 'x', structured_outputs: { grammar: 'root ::= "a"' } });
    expect(compiler.compiled).toEqual([
      { kind: 'json', schema },
      { kind: 'json', schema: true },
      { kind: 'regex', pattern: '[a-z]+' },
      { kind: 'choice', choices: ['yes', 'no'] },
      { kind: 'json', schema },
      { kind: 'grammar', ebnf: 'root ::= "a"' },
    ]);
    expect(legacy.headers['x-serve-fn-ignored-fields']).toBeUndefined();
    expect(fake.requests.map((r) => r.structuredOutput)).toEqual(compiler.compiled);
  });

  it('tool_choice required and named are enforced with a JSON schema, and parsed as calls', async () => {
    const compiler = recordingCompiler();
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const named = await serve('{"city": "Paris"}', { structuredOutputs: compiler });
    const res = (await named.post('/v1/chat/completions', { messages: USER, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } }, chat_template_kwargs: { enable_thinking: false } })).json();
    expect(compiler.compiled[0]).toEqual({ kind: 'json', schema: tools[0].function.parameters });
    expect(res.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { tool_calls: [{ function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] } });
    const required = await serve('[{"name": "get_weather", "parameters": {"city": "Rome"}}]', { structuredOutputs: compiler });
    const all = (await required.post('/v1/chat/completions', { messages: USER, tools, tool_choice: 'required', chat_template_kwargs: { enable_thinking: false } })).json();
    expect(compiler.compiled[1]).toMatchObject({ kind: 'json', schema: { type: 'array', minItems: 1 } });
    expect(all.choices[0].message.tool_calls[0].function).toEqual({ name: 'get_weather', arguments: '{"city":"Rome"}' });
  });
});

describe('errors: vLLM’s statuses in {"error": {message, type, param, code}}', () => {
  const cases: [string, string, object, string | null, RegExp][] = [
    ['unknown model', '/v1/chat/completions', { model: 'nope', messages: USER }, 'model', /The model `nope` does not exist/],
    ['temperature < 0', '/v1/chat/completions', { messages: USER, temperature: -1 }, 'temperature', /temperature must be non-negative, got -1/],
    ['n < 1', '/v1/completions', { prompt: 'x', n: 0 }, 'n', /n must be at least 1/],
    ['top_logprobs without logprobs', '/v1/chat/completions', { messages: USER, top_logprobs: 3 }, 'top_logprobs', /`logprobs` must be set to true/],
    ['top_logprobs over 20', '/v1/chat/completions', { messages: USER, logprobs: true, top_logprobs: 21 }, 'top_logprobs', /greater than max allowed: 20/],
    ['completions logprobs over 20', '/v1/completions', { prompt: 'x', logprobs: 21 }, 'logprobs', /greater than max allowed: 20/],
    ['stream_options without stream', '/v1/chat/completions', { messages: USER, stream_options: { include_usage: true } }, 'stream_options', /only be defined when `stream=True`/],
    ['an empty tools list', '/v1/chat/completions', { messages: USER, tools: [] }, 'tools', /must not be an empty array/],
    ['tool_choice without tools', '/v1/chat/completions', { messages: USER, tool_choice: 'auto' }, 'tool_choice', /`tools` must be set/],
    ['a named tool not offered', '/v1/chat/completions', { messages: USER, tools: [{ type: 'function', function: { name: 'a' } }], tool_choice: { type: 'function', function: { name: 'b' } } }, 'tool_choice', /Tool 'b' has not been passed/],
    ['no messages', '/v1/chat/completions', {}, 'messages', /non-empty list/],
    ['a bad prompt', '/v1/completions', { prompt: 5 }, 'prompt', /`prompt` must be/],
    ['a structured output without a grammar engine', '/v1/chat/completions', { messages: USER, response_format: { type: 'json_object' } }, 'response_format', /has no grammar engine/],
    ['tool_choice required without a grammar engine', '/v1/chat/completions', { messages: USER, tools: [{ type: 'function', function: { name: 'a' } }], tool_choice: 'required' }, 'tool_choice', /has no grammar engine/],
    ['two structured outputs', '/v1/completions', { prompt: 'x', structured_outputs: { regex: 'a', choice: ['a'] } }, 'structured_outputs', /only use one kind/],
    ['json_schema without json_schema', '/v1/chat/completions', { messages: USER, response_format: { type: 'json_schema' } }, 'response_format', /`json_schema` must be set/],
    ['a request chat template', '/v1/chat/completions', { messages: USER, chat_template: '{{ 1 }}' }, 'chat_template', /does not accept templates/],
    ['both continue_final_message and add_generation_prompt', '/v1/chat/completions', { messages: USER, continue_final_message: true }, 'continue_final_message', /Cannot set both/],
    ['an out-of-vocabulary logit_bias', '/v1/chat/completions', { messages: USER, logit_bias: { '999999999': 1 } }, 'logit_bias', /out-of-vocab/],
    ['chat max_tokens 0', '/v1/chat/completions', { messages: USER, max_tokens: 0 }, 'max_tokens', /at least 1/],
    ['completions max_tokens 0 without echo', '/v1/completions', { prompt: 'x', max_tokens: 0 }, 'max_tokens', /at least 1/],
    ['min_tokens over max_tokens', '/v1/completions', { prompt: 'x', max_tokens: 2, min_tokens: 3 }, 'min_tokens', /less than or equal to max_tokens/],
  ];
  for (const [name, url, payload, param, message] of cases) {
    it(name, async () => {
      const { post, fake } = await serve('x');
      const res = await post(url, payload);
      const status = name === 'unknown model' ? 404 : 400;
      expect(res.statusCode).toBe(status);
      expect(res.json().error).toMatchObject({ code: status, param, message: expect.stringMatching(message), type: expect.any(String) });
      expect(fake.requests).toHaveLength(0);
    });
  }

  it('a prompt plus max_tokens past the context: 400 with n_prompt_tokens and n_ctx', async () => {
    const { post } = await serve('x', { maxModelLen: 20 });
    const prompt = 'one two three four five six seven eight nine ten';
    const promptTokens = (await ids(prompt)).length;
    const res = await post('/v1/completions', { prompt, max_tokens: 15 });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 400, param: 'input_tokens', n_prompt_tokens: promptTokens, n_ctx: 20, message: expect.stringMatching(/maximum context length is 20 tokens\. However, you requested 15 output tokens/) });
    const chat = await post('/v1/chat/completions', { messages: [{ role: 'user', content: prompt.repeat(3) }] });
    expect(chat.statusCode).toBe(400);
    expect(chat.json().error.n_ctx).toBe(20);
  });
});

describe('fields serve-fn does not use are named, not silently dropped', () => {
  it('x-serve-fn-ignored-fields lists them', async () => {
    const { post } = await serve('ok');
    const res = await post('/v1/chat/completions', { messages: USER, user: 'u1', frobnicate: true, max_tokens: 3 });
    expect(res.headers['x-serve-fn-ignored-fields']).toBe('user, frobnicate');
    const clean = await post('/v1/chat/completions', { messages: USER });
    expect(clean.headers['x-serve-fn-ignored-fields']).toBeUndefined();
  });

  it("vLLM's prompt_logprobs is not served: named as ignored, and no prompt logprobs are computed for it", async () => {
    const { post, fake } = await serve('ok');
    for (const url of ['/v1/completions', '/v1/chat/completions']) {
      const res = await post(url, { ...(url.endsWith('chat/completions') ? { messages: USER } : { prompt: 'x' }), prompt_logprobs: 2, max_tokens: 3 });
      expect(res.statusCode).toBe(200);
      expect(res.headers['x-serve-fn-ignored-fields']).toBe('prompt_logprobs');
      expect(res.json()).not.toHaveProperty('prompt_logprobs');
      expect(res.json().choices[0]).not.toHaveProperty('prompt_logprobs');
    }
    expect(fake.requests.every((r) => r.sampling.promptLogprobs === undefined)).toBe(true);
  });
});

describe('tokenize, detokenize, version, health, models', () => {
  it('/tokenize takes the prompt form and the messages form; /detokenize answers {prompt}', async () => {
    const { post } = await serve('x', { maxModelLen: 512 });
    const prompt = (await post('/tokenize', { prompt: 'Hello world' })).json();
    expect(prompt).toEqual({ count: 2, max_model_len: 512, tokens: await ids('Hello world') });
    const chat = (await post('/tokenize', { messages: USER })).json();
    expect(await tokenizer.decode(chat.tokens, false)).toBe('<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n');
    expect((await post('/detokenize', { tokens: prompt.tokens })).json()).toEqual({ prompt: 'Hello world' });
    expect((await post('/detokenize', { tokens: [10 ** 9] })).statusCode).toBe(400);
  });

  it('/version, /health (503 until ready) and /v1/models with max_model_len', async () => {
    const { app, fake } = await serve('x', { maxModelLen: 2048 });
    expect((await app.inject('/version')).json()).toEqual({ version: '9.9.9' });
    fake.isReady = false;
    const loading = await app.inject('/health');
    expect(loading.statusCode).toBe(503);
    expect(loading.json()).toEqual({ error: { code: 503, message: 'Loading model', type: 'unavailable_error' } });
    fake.isReady = true;
    expect((await app.inject('/health')).statusCode).toBe(200);
    const models = (await app.inject('/v1/models')).json();
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'fake-qwen3', object: 'model', owned_by: 'serve-fn', max_model_len: 2048 }] });
    expect((await app.inject('/v1/models/fake-qwen3')).json()).toMatchObject({ id: 'fake-qwen3', max_model_len: 2048 });
    expect((await app.inject('/v1/models/other')).statusCode).toBe(404);
  });
});
