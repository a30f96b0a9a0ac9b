import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ServeFnServer } from 'serve-fn';
import { {{className}} } from '../src/{{modelName}}.model.js';

// The server runs the model in worker threads, as `serve-fn start` does; fastify's inject and
// injectWS talk to it without opening a port.
const server = new ServeFnServer({ models: [{{className}}], moduleUrl: new URL('../index.ts', import.meta.url).href, logger: false, collectProcessMetrics: false });

before(() => server.start());
after(() => server.close());

test('generate streams one SSE event per token', async () => {
  const res = await server.app.inject({ method: 'POST', url: '/generate', payload: { prompt: 'stream small models' } });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-type'], 'text/event-stream');
  assert.equal(res.body, 'data: {"index":0,"token":"stream"}\n\ndata: {"index":1,"token":"small"}\n\ndata: {"index":2,"token":"models"}\n\n');
});

/** Opens the meter socket and collects its messages until the server closes it. */
async function meterSession(send: (ws: { send(data: string | Buffer): void }) => void): Promise<{ messages: unknown[]; code: number }> {
  const ws = await server.app.injectWS('/ws/meter');
  const messages: unknown[] = [];
  ws.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString())));
  const closed = new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));
  send(ws);
  return { messages, code: await closed };
}

test('the meter answers each PCM frame with its level and stop with a summary', async () => {
  const loud = Buffer.alloc(3200);
  for (let i = 0; i < 1600; i++) loud.writeInt16LE(i % 2 === 0 ? 16384 : -16384, i * 2);
  const { messages, code } = await meterSession((ws) => {
    ws.send(JSON.stringify({ type: 'start', sample_rate: 16000 }));
    ws.send(loud);
    ws.send(loud);
    ws.send(JSON.stringify({ type: 'stop' }));
  });
  assert.deepEqual(messages, [
    { type: 'started', sample_rate: 16000, instance: (messages[0] as { instance: number }).instance },
    { type: 'level', dbfs: -6, seconds: 0.1 },
    { type: 'level', dbfs: -6, seconds: 0.2 },
    { type: 'summary', seconds: 0.2, peak_dbfs: -6 },
  ]);
  assert.equal(code, 1000);
});

test('audio before start closes the socket with 1008 after an error message', async () => {
  const { messages, code } = await meterSession((ws) => ws.send(Buffer.alloc(320)));
  assert.deepEqual(messages, [{ error: 'send {"type":"start"} before audio', code: 'SF_ERR_BAD_REQUEST' }]);
  assert.equal(code, 1008);
});

test('an invalid control message gets an error message and the socket stays open', async () => {
  const { messages, code } = await meterSession((ws) => {
    ws.send(JSON.stringify({ type: 'pause' }));
    ws.send(JSON.stringify({ type: 'start' }));
    ws.send(JSON.stringify({ type: 'stop' }));
  });
  assert.equal((messages[0] as { code: string }).code, 'SF_ERR_MESSAGE_INVALID');
  assert.deepEqual(messages.slice(1).map((m) => (m as { type: string }).type), ['started', 'summary']);
  assert.equal(code, 1000);
});
