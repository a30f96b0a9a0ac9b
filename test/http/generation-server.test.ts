import { afterAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { fakeServedGenerator, qwen3Tokenizer, QWEN3_IM_END } from '../helpers/fake-generator.js';

const tokenizer = await qwen3Tokenizer();
const servers: ServeFnServer[] = [];
afterAll(() => Promise.all(servers.map((s) => s.close())));

describe('ServeFnServer with generators', () => {
  it('serves the generation routes, and its readiness waits for the generators', async () => {
    const out = [...(await tokenizer.encode('Bonjour', false)), QWEN3_IM_END];
    const served = await fakeServedGenerator(() => out);
    const server = new ServeFnServer({ models: [], generators: [served], logger: false, collectProcessMetrics: false });
    servers.push(server);
    await server.start();
    const chat = await server.app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { messages: [{ role: 'user', content: 'Hi' }], chat_template_kwargs: { enable_thinking: false } } });
    expect(chat.statusCode).toBe(200);
    expect(chat.json().choices[0].message.content).toBe('Bonjour');
    expect((await server.app.inject('/v1/models')).json().data).toEqual([expect.objectContaining({ id: 'fake-qwen3', max_model_len: 4096 })]);
    const paths = Object.keys(((await server.openapi()) as { paths: Record<string, unknown> }).paths);
    expect(paths).toEqual(expect.arrayContaining(['/v1/chat/completions', '/v1/completions', '/tokenize', '/detokenize', '/version', '/v1/models']));
    served.generator.isReady = false;
    expect((await server.app.inject('/health')).statusCode).toBe(503);
    expect((await server.app.inject('/health/ready')).statusCode).toBe(503);
    served.generator.isReady = true;
    expect((await server.app.inject('/health')).statusCode).toBe(200);
    expect((await server.app.inject('/health/ready')).statusCode).toBe(200);
  });
});

describe('KServe v2: each generator is a v2 model with Triton’s generate extension', () => {
  it('generate answers text_output (the prompt prepended, as Triton’s vLLM backend), generate_stream the deltas', async () => {
    const out = [...(await tokenizer.encode(' is a server.', false)), QWEN3_IM_END];
    const served = await fakeServedGenerator(() => out);
    const server = new ServeFnServer({ models: [], generators: [served], logger: false, collectProcessMetrics: false });
    servers.push(server);
    await server.start();
    const meta = (await server.app.inject('/v2/models/fake-qwen3')).json();
    expect(meta.inputs.map((i: { name: string }) => i.name)).toContain('text_input');
    const whole = await server.app.inject({ method: 'POST', url: '/v2/models/fake-qwen3/generate', payload: { text_input: 'Triton', parameters: { temperature: 0, max_tokens: 20 } } });
    expect(whole.statusCode).toBe(200);
    expect(whole.json()).toMatchObject({ model_name: 'fake-qwen3', text_output: 'Triton is a server.' });
    expect(served.generator.requests[0].sampling).toMatchObject({ temperature: 0, maxTokens: 20 });
    const counted = await server.app.inject({
      method: 'POST',
      url: '/v2/models/fake-qwen3/generate',
      payload: { text_input: 'Triton', exclude_input_in_output: true, return_finish_reason: true, return_num_output_tokens: true, sampling_parameters: JSON.stringify({ max_tokens: 2, stop: ['never'] }) },
    });
    expect(counted.json()).toMatchObject({ text_output: ' is a', finish_reason: 'length', num_output_tokens: 2 });
    const stream = await server.app.inject({ method: 'POST', url: '/v2/models/fake-qwen3/generate_stream', payload: { text_input: 'Triton', return_finish_reason: true } });
    const events = stream.body.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
    expect(events.map((e) => e.text_output).join('')).toBe(' is a server.');
    expect(events.at(-1).finish_reason).toBe('stop');
    // Decoupled, as Triton's vLLM backend model: /infer refuses it as it refuses every decoupled model (SF_ERR_UNSUPPORTED).
    expect((await server.app.inject({ method: 'POST', url: '/v2/models/fake-qwen3/infer', payload: { inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], data: ['x'] }] } })).statusCode).toBe(501);
    const tooLong = await server.app.inject({ method: 'POST', url: '/v2/models/fake-qwen3/generate', payload: { text_input: 'x', parameters: { max_tokens: 5000 } } });
    expect(tooLong.statusCode).toBe(400);
  });
});
