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
    served.generator.isReady = false;
    expect((await server.app.inject('/health')).statusCode).toBe(503);
    expect((await server.app.inject('/health/ready')).statusCode).toBe(503);
    served.generator.isReady = true;
    expect((await server.app.inject('/health')).statusCode).toBe(200);
    expect((await server.app.inject('/health/ready')).statusCode).toBe(200);
  });
});
