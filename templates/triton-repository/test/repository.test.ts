import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { ServeFnServer } from 'serve-fn';

// Serves models/ as `serve-fn start models` does, and answers KServe v2 requests through fastify's inject.
const root = fileURLToPath(new URL('../models', import.meta.url));
const server = new ServeFnServer({ models: [], repository: { root }, logger: false, collectProcessMetrics: false });

before(() => server.start());
after(() => server.close());

const a = Array.from({ length: 16 }, (_, i) => i);
const b = Array.from({ length: 16 }, () => 1);

test('the model is listed and ready', async () => {
  const res = await server.app.inject({ method: 'GET', url: '/v2/models/{{modelName}}/ready' });
  assert.equal(res.statusCode, 200);
});

test('v2 infer adds and subtracts', async () => {
  const res = await server.app.inject({
    method: 'POST',
    url: '/v2/models/{{modelName}}/infer',
    payload: {
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: a },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: b },
      ],
    },
  });
  assert.equal(res.statusCode, 200);
  const outputs = Object.fromEntries((res.json().outputs as { name: string; data: number[] }[]).map((o) => [o.name, o.data]));
  assert.deepEqual(outputs, { OUTPUT0: a.map((v) => v + 1), OUTPUT1: a.map((v) => v - 1) });
});

test('an input of the wrong shape is refused with a 400', async () => {
  const res = await server.app.inject({
    method: 'POST',
    url: '/v2/models/{{modelName}}/infer',
    payload: { inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2], data: [1, 2] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: b }] },
  });
  assert.equal(res.statusCode, 400);
});
