import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { AddSub, Doubler } from '../fixtures/bls/pipeline-models.js';

const tmp = join(process.cwd(), 'test', '.tmp', `bls-${process.pid}`);
const range = <T = number>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));

describe('ctx.loadModel and ctx.infer across worker threads', () => {
  let server: ServeFnServer;

  beforeAll(async () => {
    mkdirSync(tmp, { recursive: true });
    process.env.SIMPLE_ONNX = join(tmp, 'simple.onnx');
    writeFileSync(process.env.SIMPLE_ONNX, buildAddSubModel({ datatype: 'INT32', size: 16 }));
    server = new ServeFnServer({
      models: [AddSub, Doubler],
      moduleUrl: new URL('../fixtures/bls/pipeline-models.ts', import.meta.url).href,
      collectProcessMetrics: false,
    });
    await server.start();
  });

  afterAll(async () => {
    await server?.close();
  });

  it('runs an ONNX model loaded with ctx.loadModel inside the worker', async () => {
    const a = range(16, (i) => i);
    const b = range(16, (i) => 100 - i);
    const res = await server.app.inject({ method: 'POST', url: '/addsub', payload: { a, b } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ sum: range(16, () => 100), diff: range(16, (i) => 2 * i - 100), batch: 1 });
  });

  it('routes ctx.infer calls from two instances through the callee batcher', async () => {
    const calls = range(6, (k) => server.app.inject({ method: 'POST', url: '/double', payload: { values: range(16, (i) => i + k) } }));
    const answers = await Promise.all(calls);
    for (const [k, res] of answers.entries()) {
      expect(res.statusCode).toBe(200);
      expect(res.json().doubled).toEqual(range(16, (i) => 2 * (i + k)));
    }
    expect(Math.max(...answers.map((r) => r.json().batch as number))).toBeGreaterThan(1);
  });

  it('validates a ctx.infer input against the callee DTO and reports it to the caller', async () => {
    const res = await server.app.inject({ method: 'POST', url: '/bad-call', payload: { values: [1, 2] } });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'b'], type: 'missing' });
  });
});
