import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnError, ServeFnServer } from '../../src/index.js';
import { BusyModel } from '../fixtures/models/busy-model.js';
import { BrokenModel } from '../fixtures/models/init-failure-model.js';
import { NeedyModel } from '../fixtures/models/unresolved-dependency-model.js';

const fixture = (file: string): string => new URL(`../fixtures/models/${file}`, import.meta.url).href;
const scratch = mkdtempSync(join(tmpdir(), 'serve-fn-workers-'));
const journal = join(scratch, 'journal.log');
// Workers copy process.env when they start, so the journal path must be set before any starts.
process.env.SERVE_FN_TEST_JOURNAL = journal;
process.env.SERVE_FN_INSTANCE_NICENESS = '3';
writeFileSync(journal, '');

const now = (): number => performance.timeOrigin + performance.now();
const journalLines = (): string[] => readFileSync(journal, 'utf8').split('\n').filter(Boolean);

let server: ServeFnServer;
let base: string;

beforeAll(async () => {
  // exposeErrors as under `serve-fn dev`: the tests read the messages of failed requests.
  server = new ServeFnServer({ models: [BusyModel], moduleUrl: fixture('busy-model.ts'), logger: false, collectProcessMetrics: false, exposeErrors: true });
  await server.start();
  base = await server.app.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await server.close();
  rmSync(scratch, { recursive: true, force: true });
});

interface Answer {
  status: number;
  type: string | null;
  body: string;
  json(): any;
}

async function post(path: string, body: unknown): Promise<Answer> {
  const init: RequestInit = body instanceof FormData ? { body } : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } };
  const res = await fetch(base + path, { method: 'POST', ...init });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), body: text, json: () => JSON.parse(text) };
}

interface BusyResult {
  instance: number;
  startMs: number;
  endMs: number;
}

async function busy(ms: number, note?: string): Promise<BusyResult> {
  const res = await post('/busy', { ms, note });
  expect(res.status).toBe(200);
  return res.json() as BusyResult;
}

async function metric(prefix: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? NaN : Number(line.split(' ').at(-1));
}

/** Resolves once two concurrent requests run on two different instances, i.e. both are up. */
async function bothInstancesServe(): Promise<void> {
  await expect
    .poll(async () => new Set((await Promise.all([busy(50), busy(50)])).map((r) => r.instance)).size, { timeout: 20_000, interval: 20 })
    .toBe(2);
}

const restarts: Record<number, number> = { 0: 0, 1: 0 };

describe('a model on two worker-thread instances', () => {
  it('runs two requests at the same time, one on each instance', async () => {
    const [a, b] = await Promise.all([busy(300), busy(300)]);
    expect([a.instance, b.instance].sort()).toEqual([0, 1]);
    // Observed by the instances themselves, so a loaded machine cannot fake or hide it: one run began
    // before the other ended. Run one after the other, they could not overlap at all.
    expect(Math.max(a.startMs, b.startMs)).toBeLessThan(Math.min(a.endMs, b.endMs));
  });

  it('keeps the HTTP thread answering while a worker spins', async () => {
    // Long enough that a starved test process still sends and reads its probe inside the hold.
    const held = busy(3_000, 'hold-live');
    await expect.poll(journalLines, { timeout: 5_000, interval: 10 }).toContain('busy hold-live');
    const sent = now();
    const live = await fetch(`${base}/health/live`);
    const answered = now();
    const { startMs, endMs } = await held;
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'live' });
    expect(startMs).toBeLessThan(sent);
    expect(answered).toBeLessThan(endMs);
  });

  it('runs instance threads at SERVE_FN_INSTANCE_NICENESS while the HTTP thread keeps its own', async () => {
    const answers = await Promise.all([0, 1, 2, 3].map(() => fetch(`${base}/niceness`).then((r) => r.json())));
    expect(answers).toEqual([0, 1, 2, 3].map(() => ({ niceness: 3 })));
    expect(getPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()))).toBe(0);
  });

  it('carries the message, code and status of each Error entry of a batch across the thread boundary', async () => {
    const kinds = ['ok', 'bad-request', 'conflict', 'not-ready', 'plain'];
    const answers = await Promise.all(kinds.map((kind) => post('/outcomes', { kind })));
    expect(answers.map((a) => a.status)).toEqual([200, 400, 409, 503, 500]);
    expect(answers[0].json()).toMatchObject({ kind: 'ok', batch: 5 });
    expect(answers.slice(1).map((a) => a.json())).toEqual([
      { error: 'text was empty', code: 'SF_ERR_BAD_REQUEST' },
      { error: 'voice already exists', code: 'SF_ERR_BAD_REQUEST' },
      { error: "Model 'busy' version 1 is not ready", code: 'SF_ERR_MODEL_NOT_READY' },
      { error: "Model 'busy' failed in BusyModel.outcomes: plain failure", code: 'SF_ERR_EXECUTION_FAILED' },
    ]);
  });

  it('fails every request of a batch with the code and message of the error the method threw', async () => {
    const answers = await Promise.all(['ok', 'throw', 'ok', 'ok', 'ok'].map((kind) => post('/outcomes', { kind })));
    for (const answer of answers) {
      expect(answer.status).toBe(500);
      expect(answer.json()).toEqual({ error: "Backend 'onnx' failed to run 'busy.onnx': out of memory", code: 'SF_ERR_BACKEND_RUN_FAILED' });
    }
  });

  it('hands uploaded files to the worker as Buffers and sends its Buffer back with the produces type', async () => {
    const form = new FormData();
    form.append('label', 'cat');
    form.append('image', new Blob([new Uint8Array([137, 80, 78, 71])], { type: 'image/png' }), 'cat.png');
    const res = await fetch(`${base}/stamp`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await res.arrayBuffer())).toEqual(Buffer.concat([Buffer.from('cat:true:'), Buffer.from([137, 80, 78, 71])]));
  });

  it('queues a full batch on a busy instance, which runs it right after its current one, and counts the wait as queue time', async () => {
    const queueUs = (): Promise<number> => metric('nv_inference_queue_duration_us{model="busy",version="1"}');
    const inputUs = (): Promise<number> => metric('nv_inference_compute_input_duration_us{model="busy",version="1"}');
    const [queuedBefore, inputBefore] = [await queueUs(), await inputUs()];
    const holds = [busy(600, 'hold-pairs-1'), busy(600, 'hold-pairs-2')];
    await expect.poll(journalLines, { timeout: 5_000, interval: 10 }).toEqual(expect.arrayContaining(['busy hold-pairs-1', 'busy hold-pairs-2']));
    const answers = Promise.all(Array.from({ length: 5 }, () => post('/busy-pairs', { ms: 50 }).then((r) => r.json() as BusyResult & { size: number })));
    // Two full pairs went to the busy instances at once; the fifth request waits for a free one.
    await expect.poll(() => metric('nv_inference_pending_request_count{model="busy"'), { timeout: 10_000, interval: 10 }).toBe(1);
    const [pairs, held] = await Promise.all([answers, Promise.all(holds)]);

    const batches = new Map(pairs.map((p) => [`${p.instance}@${p.startMs}`, p]));
    expect([...batches.values()].map((b) => b.size).sort()).toEqual([1, 2, 2]);
    for (const batch of batches.values()) {
      const hold = held.find((h) => h.instance === batch.instance)!;
      expect(batch.startMs).toBeGreaterThanOrEqual(hold.endMs);
    }
    // Each full pair ran on its instance next, before the fifth request got an instance.
    const fullPairs = [...batches.values()].filter((b) => b.size === 2);
    expect(new Set(fullPairs.map((b) => b.instance))).toEqual(new Set([0, 1]));
    const single = [...batches.values()].find((b) => b.size === 1)!;
    expect(single.startMs).toBeGreaterThanOrEqual(Math.min(...fullPairs.map((p) => p.endMs)));
    // Four requests waited behind the holds for about 0.5 s each: that wait is queue time, not compute.
    await expect.poll(async () => (await queueUs()) - queuedBefore, { timeout: 2_000, interval: 20 }).toBeGreaterThan(4 * 400_000);
    expect((await inputUs()) - inputBefore).toBeLessThan(((await queueUs()) - queuedBefore) / 2);
  });

  it('answers each request of an unbatched group sent to one instance as it ends, not when the last one does', async () => {
    const holds = [busy(1_500, 'hold-group-1'), busy(1_500, 'hold-group-2')];
    await expect.poll(journalLines, { timeout: 5_000, interval: 10 }).toEqual(expect.arrayContaining(['busy hold-group-1', 'busy hold-group-2']));
    // 1 s runs: each answer has a second to arrive before the next run ends, even on a starved machine.
    const answers = [0, 1, 2].map(() => busy(1_000).then((result) => ({ ...result, answeredMs: now() })));
    // All three wait while both instances are busy, so the first instance to free up takes them together.
    await expect.poll(() => metric('nv_inference_pending_request_count{model="busy"'), { timeout: 10_000, interval: 10 }).toBe(3);
    const group = (await Promise.all(answers)).sort((a, b) => a.startMs - b.startMs);
    await Promise.all(holds);
    expect(new Set(group.map((r) => r.instance)).size).toBe(1);
    expect(group[0].answeredMs).toBeLessThan(group[1].endMs);
    expect(group[1].answeredMs).toBeLessThan(group[2].endMs);
  });

  it('never runs a request whose client disconnected while it waited in the queue', async () => {
    const holds = [busy(1_500, 'hold-1'), busy(1_500, 'hold-2')];
    await expect.poll(journalLines, { timeout: 5_000, interval: 10 }).toEqual(expect.arrayContaining(['busy hold-1', 'busy hold-2']));

    const abandoned = httpRequest(`${base}/record`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    abandoned.on('error', () => {});
    abandoned.end(JSON.stringify({ id: 'abandoned' }));
    await expect.poll(() => metric('nv_inference_pending_request_count{model="busy"'), { timeout: 10_000, interval: 10 }).toBe(1);
    abandoned.destroy();
    await expect.poll(() => metric('nv_inference_request_failure{model="busy",version="1",reason="CANCELED"}'), { timeout: 10_000, interval: 10 }).toBe(1);

    // Queued after the abandoned request: once this has run, the abandoned one would have too.
    expect((await post('/record', { id: 'kept' })).body).toBe('kept');
    await Promise.all(holds);
    expect(journalLines()).toContain('ran kept');
    expect(journalLines()).not.toContain('ran abandoned');
  });

  it.each([
    ['exits inside a method', 'exit', 'worker exited with code 3'],
    ['dies of an uncaught error in a timer', 'throw-later', 'uncaught error: timer blew up'],
  ])('restarts a worker that %s: only its request fails, naming the instance, and later requests succeed', async (_, mode, reason) => {
    const [survivor, crashed] = await Promise.all([post('/busy', { ms: 400 }), post('/crash', { mode })]);
    expect(survivor.status).toBe(200);
    const lost = 1 - (survivor.json() as BusyResult).instance;
    restarts[lost]++;
    expect(crashed.status).toBe(500);
    expect(crashed.json()).toEqual({
      error: `Model 'busy' instance ${lost} stopped while running this request (${reason}); the instance is being restarted.`,
      code: 'SF_ERR_INSTANCE_CRASHED',
    });

    expect((await post('/record', { id: `after-${mode}` })).body).toBe(`after-${mode}`);
    await bothInstancesServe();
  });

  it('counts each restart in /metrics, per instance', async () => {
    expect(restarts[0] + restarts[1]).toBe(2);
    for (const instance of [0, 1]) {
      const count = await metric(`serve_fn_instance_restarts_total{model="busy",version="1",instance="${instance}"}`);
      // prom-client shows a labelled series only once it has been counted.
      expect(count).toBe(restarts[instance] > 0 ? restarts[instance] : NaN);
    }
  });
});

describe('start-up failures inside workers', () => {
  async function startFailure(models: ServeFnServer['definitions'][number]['target'][], file: string): Promise<ServeFnError> {
    const failing = new ServeFnServer({ models, moduleUrl: fixture(file), logger: false, collectProcessMetrics: false });
    const error = await failing.start().catch((err: unknown) => err);
    const ready = await failing.app.inject({ method: 'GET', url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    await failing.close();
    expect(error).toBeInstanceOf(ServeFnError);
    return error as ServeFnError;
  }

  it('aborts start() when initialize throws, naming the model, the instance and the original error', async () => {
    const error = await startFailure([BrokenModel], 'init-failure-model.ts');
    expect(error.code).toBe('SF_ERR_INITIALIZE_FAILED');
    expect(error.message).toBe("Model 'broken' instance 0 failed in initialize(): weights file missing: /models/broken.onnx");
  });

  it('aborts start() with SF_ERR_DEPENDENCY_UNRESOLVED when the worker cannot construct the class', async () => {
    const error = await startFailure([NeedyModel], 'unresolved-dependency-model.ts');
    expect(error.code).toBe('SF_ERR_DEPENDENCY_UNRESOLVED');
    expect(error.message).toMatch(
      /^Cannot construct model class 'NeedyModel': .*TypeInfo not known for "TokenizerFile".*\. Make each constructor dependency @injectable\(\) or register it in the container\.$/s,
    );
  });
});

describe('entry modules', () => {
  it('serves on a worker instance a model listed only in the entry\'s default { models } export', async () => {
    const { default: entry } = await import('../fixtures/models/entry-models.js');
    const listed = entry.models.find((m) => m.name === 'ListedModel')!;
    const served = new ServeFnServer({ models: [listed as never], moduleUrl: fixture('entry-models.ts'), logger: false, collectProcessMetrics: false });
    try {
      await served.start();
      const res = await served.app.inject({ method: 'POST', url: '/listed' });
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('listed');
    } finally {
      await served.close();
    }
  });
});
