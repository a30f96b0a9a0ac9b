import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ServeFnServer } from 'serve-fn';
import { {{className}} } from '../src/{{modelName}}.model.js';

// The server runs the model in a worker thread, as `serve-fn start` does, and answers through fastify's inject.
const server = new ServeFnServer({ models: [{{className}}], moduleUrl: new URL('../index.ts', import.meta.url).href, logger: false, collectProcessMetrics: false });

before(() => server.start());
after(() => server.close());

test('predict counts words and finds the longest', async () => {
  const res = await server.app.inject({ method: 'POST', url: '/predict', payload: { text: 'serve small models quickly' } });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { words: 4, longest: 'quickly', instance: 0 });
});

test('a request without text gets a 422', async () => {
  const res = await server.app.inject({ method: 'POST', url: '/predict', payload: { txt: 'typo' } });
  assert.equal(res.statusCode, 422);
  assert.deepEqual(res.json(), { detail: [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing' }] });
});
