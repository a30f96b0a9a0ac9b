import 'reflect-metadata';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, Model, ServeFnServer, type ModelContext } from '../../src/index.js';
import { JournaledModel } from '../fixtures/models/lifecycle-model.js';

const fixtures = new URL('../fixtures/models/', import.meta.url);
const scratch = mkdtempSync(join(tmpdir(), 'serve-fn-lifecycle-'));
const journal = join(scratch, 'journal.log');
// Workers copy process.env when they start, so the journal path must be set before any starts.
process.env.SERVE_FN_TEST_JOURNAL = journal;
writeFileSync(journal, '');

const lines = (): string[] => readFileSync(journal, 'utf8').split('\n').filter(Boolean);

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

describe('a model on worker threads, from start to close', () => {
  let server: ServeFnServer;
  let base: string;

  beforeAll(async () => {
    server = new ServeFnServer({ models: [JournaledModel], moduleUrl: new URL('lifecycle-model.ts', fixtures).href, logger: false, collectProcessMetrics: false });
    server.app.server.on('listening', () => appendFileSync(journal, 'listening\n'));
    base = await server.listen(0, '127.0.0.1');
  });

  afterAll(async () => {
    await server.close();
  });

  async function post(id: string, ms: number): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${base}/slow`, { method: 'POST', body: JSON.stringify({ id, ms }), headers: { 'content-type': 'application/json' } });
    return { status: res.status, body: await res.json() };
  }

  it('runs initialize in every instance before the port opens, and is ready once listening', async () => {
    const steps = lines().map((l) => l.split(' ').slice(0, 2).join(' '));
    expect(steps.slice(0, 2).sort()).toEqual(['initialize 0', 'initialize 1']);
    expect(steps[2]).toBe('listening');
    const ready = await fetch(`${base}/health/ready`);
    expect(ready.status).toBe(200);
  });

  it("passes each instance its context: names, index and count, its device (devices[i % n]), folder and config", () => {
    const contexts = lines()
      .filter((l) => l.startsWith('initialize '))
      .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as ModelContext)
      .sort((a, b) => a.instanceIndex - b.instanceIndex);
    const config = {
      name: 'journaled',
      version: '3',
      description: 'lifecycle probe',
      instances: { count: 2, kind: 'gpu', devices: [4, 7] },
      endpoints: [{ method: 'POST', path: '/slow', batch: null }],
    };
    const modelDir = fileURLToPath(fixtures).replace(/\/$/, '');
    // ctx.logger is a pino logger, which JSON writes as {}.
    expect(contexts).toEqual([
      { modelName: 'journaled', modelVersion: '3', instanceName: 'journaled_0', instanceIndex: 0, instanceCount: 2, deviceKind: 'gpu', deviceId: 4, modelDir, config, logger: {} },
      { modelName: 'journaled', modelVersion: '3', instanceName: 'journaled_1', instanceIndex: 1, instanceCount: 2, deviceKind: 'gpu', deviceId: 7, modelDir, config, logger: {} },
    ]);
  });

  it('on close, finishes the request in flight, answers new ones 503, then finalizes every worker', async () => {
    const inFlight = post('in-flight', 500);
    await expect.poll(lines, { timeout: 5_000, interval: 10 }).toContain('start in-flight');

    const closing = server.close();
    const late = await post('late', 0);
    expect(late).toEqual({
      status: 503,
      body: { error: 'Server is stopping, scheduler for model has stopped accepting new inference requests', code: 'SF_ERR_DRAINING' },
    });
    const ready = await fetch(`${base}/health/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ error: 'Server is not ready: draining.', code: 'SF_ERR_NOT_READY' });

    const answer = await inFlight;
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ id: 'in-flight' });
    await closing;
    expect(server.state.phase).toBe('stopped');

    const after = lines().slice(lines().indexOf('start in-flight'));
    expect(after[0]).toBe('start in-flight');
    expect(after[1]).toBe('done in-flight');
    expect(after.slice(2).sort()).toEqual(['finalize 0', 'finalize 1']);
  });
});

const inlineContexts: ModelContext[] = [];
const inlineSteps: string[] = [];

@Model({ name: 'inline-probe' })
@Instances(3, { inline: true, kind: 'npu', devices: [4, 7] })
class InlineProbe {
  private index = -1;

  async initialize(ctx: ModelContext): Promise<void> {
    this.index = ctx.instanceIndex;
    inlineContexts.push(ctx);
    inlineSteps.push(`initialize ${ctx.instanceIndex}`);
  }

  @Endpoint('/inline', { method: 'GET' })
  @Batch(4)
  async run(batch: unknown[]): Promise<number[]> {
    return batch.map(() => this.index);
  }

  async finalize(): Promise<void> {
    inlineSteps.push(`finalize ${this.index}`);
  }
}

describe('inline instances', () => {
  it('get the same context, cycling through the devices, and are finalized on close', async () => {
    const server = new ServeFnServer({ models: [InlineProbe], logger: false, collectProcessMetrics: false });
    await server.start();
    expect(inlineSteps.sort()).toEqual(['initialize 0', 'initialize 1', 'initialize 2']);
    const contexts = [...inlineContexts].sort((a, b) => a.instanceIndex - b.instanceIndex);
    expect(contexts.map((c) => [c.instanceName, c.instanceIndex, c.instanceCount, c.deviceKind, c.deviceId])).toEqual([
      ['inline-probe_0', 0, 3, 'npu', 4],
      ['inline-probe_1', 1, 3, 'npu', 7],
      ['inline-probe_2', 2, 3, 'npu', 4],
    ]);
    // Without a module URL there is no model file, so the model folder is the working directory.
    expect(contexts[0].modelDir).toBe(process.cwd());
    expect(contexts[0].config.endpoints).toEqual([
      { method: 'GET', path: '/inline', batch: expect.objectContaining({ maxBatchSize: 4, maxQueueDelayUs: 0 }) },
    ]);

    expect((await server.app.inject({ method: 'GET', url: '/inline' })).statusCode).toBe(200);
    inlineSteps.length = 0;
    await server.close();
    expect(inlineSteps.sort()).toEqual(['finalize 0', 'finalize 1', 'finalize 2']);
  });
});
