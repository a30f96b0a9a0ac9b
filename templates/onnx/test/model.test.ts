import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ServeFnServer } from 'serve-fn';
import { {{className}} } from '../src/{{modelName}}.model.js';

// The server loads models/add_sub.onnx in a worker thread, as `serve-fn start` does, and answers through fastify's inject.
const server = new ServeFnServer({ models: [{{className}}], moduleUrl: new URL('../index.ts', import.meta.url).href, logger: false, collectProcessMetrics: false });

before(() => server.start());
after(() => server.close());

const a = Array.from({ length: 16 }, (_, i) => i);
const b = Array.from({ length: 16 }, () => 10);

test('add-sub runs the ONNX model', async () => {
  const res = await server.app.inject({ method: 'POST', url: '/add-sub', payload: { a, b } });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { sum: a.map((v) => v + 10), difference: a.map((v) => v - 10) });
});

test('concurrent requests each get their own answer', async () => {
  const answers = await Promise.all(
    [1, 2, 3].map((k) => server.app.inject({ method: 'POST', url: '/add-sub', payload: { a: a.map((v) => v * k), b } })),
  );
  assert.deepEqual(answers.map((res) => res.json().sum[15]), [25, 40, 55]);
});

test('a vector of the wrong length gets a 422', async () => {
  const res = await server.app.inject({ method: 'POST', url: '/add-sub', payload: { a: [1, 2], b } });
  assert.equal(res.statusCode, 422);
  assert.equal(res.json().detail[0].loc.join('.'), 'body.a');
});
