import { describe, expect, it } from 'vitest';
import { InstanceEngine } from '../../src/engine/instance-engine.js';
import type { InstanceEvents, ModelInstance } from '../../src/engine/model-instance.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { StepScheduler, type StepLimits, type StepObserver, type StepWork } from '../../src/diffusion/step-scheduler.js';
import type { TensorWireRequest } from '../../src/wire/tensor-model-plan.js';
import { now } from '../../src/wire/epoch-time.js';
import type { ExecuteCall, ExecuteOutcome } from '../../src/wire/wire-format.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { settle } from '../helpers/settle.js';

/** One denoiser instance whose calls the test finishes by hand; each call's request ids and rows are logged. */
class ManualDenoiser {
  readonly calls: { ids: string[]; rows: number }[] = [];
  private readonly waiting: (() => void)[] = [];

  factory = (index: number, _events: InstanceEvents): ModelInstance => ({
    index,
    start: async () => undefined,
    stop: async () => undefined,
    execute: (call: ExecuteCall) => {
      const requests = call.kind === 'tensor' ? call.requests : [];
      this.calls.push({ ids: requests.map((r) => r.id!), rows: requests.reduce((sum, r) => sum + r.inputs[0].shape[0], 0) });
      return new Promise<ExecuteOutcome>((resolve) => {
        this.waiting.push(() => resolve({ results: requests.map(() => ({ ok: true, value: { outputs: [] } })), computeStartMs: now(), computeEndMs: now() }));
      });
    },
    openStream: () => {
      throw new Error('no streams');
    },
    openSocket: () => {
      throw new Error('no sockets');
    },
  });

  /** Finishes the calls in flight. */
  async step(): Promise<void> {
    for (const finish of this.waiting.splice(0)) finish();
    await settle();
  }

  /** Steps until nothing is in flight. */
  async runAll(): Promise<void> {
    for (let i = 0; i < 1000 && this.waiting.length > 0; i++) await this.step();
  }
}

/** A request of `steps` steps; `done` counts the steps it advanced. */
function work(id: string, key: string, steps: number, rows = 1): StepWork & { id: string; done: number } {
  const w = {
    id, key, rows, submittedMs: now(), done: 0,
    stepInputs: (): TensorWireRequest => ({ id, inputs: [{ name: 'x', datatype: 'FP32', shape: [rows], data: new Float32Array(rows) }], outputs: [], parameters: {} }),
    advance: () => ++w.done === steps,
  };
  return w;
}

const observed = () => {
  const log = { admitted: 0, steps: 0, aborted: 0, maxRunning: 0, rows: [] as number[] };
  const observer: StepObserver = {
    admitted: () => void log.admitted++,
    stepped: (rows) => {
      log.steps++;
      log.rows.push(rows);
    },
    aborted: () => void log.aborted++,
    runningChanged: (n) => void (log.maxRunning = Math.max(log.maxRunning, n)),
  };
  return { log, observer };
};

async function setUp(limits: Partial<StepLimits> = {}, clock?: FakeClock, maxRows?: number) {
  const denoiser = new ManualDenoiser();
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const engine = new InstanceEngine({ name: 'denoiser', version: '1', instanceCount: 1, factory: denoiser.factory, recorder, log: () => undefined, clock });
  await engine.start();
  const { log, observer } = observed();
  const scheduler = engine.register(new StepScheduler('denoiser', engine, { maxRunning: 8, admissionWaitUs: 0, ...limits }, observer, maxRows));
  return { denoiser, engine, scheduler, log, recorder };
}

describe('StepScheduler (step-level batching of the denoiser)', () => {
  it('requests at different steps and step counts share one denoiser call per tick; each gets exactly its steps and completes', async () => {
    const { denoiser, engine, scheduler } = await setUp();
    const a = work('a', 'k', 3);
    const pa = engine.submit(scheduler, a, {});
    await settle();
    expect(denoiser.calls).toEqual([{ ids: ['a'], rows: 1 }]);
    await denoiser.step();
    // b joins while a is at its second step.
    const b = work('b', 'k', 4, 2);
    const pb = engine.submit(scheduler, b, {});
    await denoiser.step();
    expect(denoiser.calls.slice(1, 3)).toEqual([{ ids: ['a'], rows: 1 }, { ids: ['a', 'b'], rows: 3 }]);
    await denoiser.runAll();
    await Promise.all([pa, pb]);
    expect([a.done, b.done]).toEqual([3, 4]);
    expect(denoiser.calls.filter((c) => c.ids.includes('b'))).toHaveLength(4);
    expect(scheduler.inflightCount + scheduler.pendingCount).toBe(0);
  });

  it('never runs more than maxRunning requests; the rest wait and are admitted between ticks', async () => {
    const { denoiser, engine, scheduler, log } = await setUp({ maxRunning: 3 });
    const works = Array.from({ length: 7 }, (_, i) => work(`r${i}`, 'k', 2 + (i % 3)));
    const done = works.map((w) => engine.submit(scheduler, w, {}));
    await settle();
    await denoiser.runAll();
    await Promise.all(done);
    expect(Math.max(...denoiser.calls.map((c) => c.ids.length))).toBe(3);
    expect(log.maxRunning).toBe(3);
    works.forEach((w, i) => expect(w.done).toBe(2 + (i % 3)));
    expect(log.admitted).toBe(7);
  });

  it("keeps each call within maxRows (an .om's largest gear): a key full of rows admits more only as its requests finish, other keys go on", async () => {
    const { denoiser, engine, scheduler, log } = await setUp({}, undefined, 4);
    // Guided requests (2 rows) of one key, steps 1..4, and two plain ones of another key.
    const guided = Array.from({ length: 4 }, (_, i) => work(`g${i}`, 'cfg', 1 + i, 2));
    const plain = [work('p0', 'plain', 3), work('p1', 'plain', 2)];
    const done = [...guided, ...plain].map((w) => engine.submit(scheduler, w, {}));
    await settle();
    await denoiser.runAll();
    await Promise.all(done);
    expect(Math.max(...denoiser.calls.map((c) => c.rows))).toBe(4);
    expect(denoiser.calls.some((c) => c.ids.includes('p0') && c.ids.includes('p1'))).toBe(true);
    [...guided, ...plain].forEach((w, i) => expect(w.done).toBe(i < 4 ? 1 + i : 3 - (i - 4)));
    expect(log.admitted).toBe(6);
  });

  it('refuses a request whose one step takes more rows than maxRows, saying why', async () => {
    const { engine, scheduler } = await setUp({}, undefined, 1);
    await expect(engine.submit(scheduler, work('g', 'cfg', 2, 2), {})).rejects.toMatchObject({ code: 'SF_ERR_BAD_REQUEST', message: expect.stringContaining('at most 1 per call') });
  });

  it('admits by deficit round robin across keys: a lone request of another resolution is not stuck behind a long queue', async () => {
    const { denoiser, engine, scheduler } = await setUp({ maxRunning: 1 });
    const order: string[] = [];
    const submit = (w: ReturnType<typeof work>) => engine.submit(scheduler, w, {}).then(() => order.push(w.key + ':' + w.id));
    const all = [...Array.from({ length: 4 }, (_, i) => submit(work(`a${i}`, '64x64', 1))), submit(work('b0', '32x32', 1))];
    await settle();
    await denoiser.runAll();
    await Promise.all(all);
    // a0 ran first (it came alone), then the keys alternate: b0 runs second, not fifth.
    expect(order.indexOf('32x32:b0')).toBeLessThanOrEqual(2);
  });

  it('a cancelled request leaves at the next step boundary: its step in flight ends, no later call carries it, the others go on', async () => {
    const { denoiser, engine, scheduler, log } = await setUp();
    const controller = new AbortController();
    const a = work('a', 'k', 10);
    const b = work('b', 'k', 3);
    const pa = engine.submit(scheduler, a, { signal: controller.signal });
    const pb = engine.submit(scheduler, b, {});
    const aFailed = pa.catch((err: unknown) => err);
    await settle();
    await denoiser.step();
    controller.abort();
    await denoiser.runAll();
    expect(await aFailed).toMatchObject({ code: 'SF_ERR_CANCELLED' });
    await pb;
    expect(a.done).toBeLessThanOrEqual(2);
    expect(denoiser.calls.slice(2).every((c) => !c.ids.includes('a'))).toBe(true);
    expect(log.aborted).toBe(1);
    expect(scheduler.inflightCount).toBe(0);
  });

  it('runs on the engine as generation steps do: a request leaves the pending count once, in its first step; each step is one execution of its rows', async () => {
    const { denoiser, engine, scheduler, recorder } = await setUp({ maxRunning: 1 });
    const metric = async (name: string) => (await recorder.registry.getSingleMetricAsString(name)).match(/version="1"} (-?\d+)/)![1];
    const a = work('a', 'k', 3, 2);
    const b = work('b', 'k', 2);
    const done = [engine.submit(scheduler, a, {}), engine.submit(scheduler, b, {})];
    await settle();
    expect(a.dispatchedMs).toBeDefined();
    expect(await metric('nv_inference_pending_request_count')).toBe('1');
    await denoiser.step();
    await denoiser.step();
    // a's third step: a was dispatched in its first, so only b (still waiting) is pending.
    expect(await metric('nv_inference_pending_request_count')).toBe('1');
    await denoiser.runAll();
    await Promise.all(done);
    expect(await metric('nv_inference_pending_request_count')).toBe('0');
    expect(await metric('nv_inference_exec_count')).toBe('5');
    expect(await metric('nv_inference_count')).toBe(String(3 * 2 + 2 * 1));
  });

  it('a step whose requests were all cancelled while waiting for the instance gives it back, and the other key goes on', async () => {
    const { denoiser, engine, scheduler } = await setUp();
    const controller = new AbortController();
    const a = work('a', 'k1', 2);
    const b = work('b', 'k2', 1);
    const pa = engine.submit(scheduler, a, {});
    await settle();
    const bFailed = engine.submit(scheduler, b, { signal: controller.signal }).catch((err: unknown) => err);
    await settle();
    controller.abort();
    await denoiser.runAll();
    expect(await bFailed).toMatchObject({ code: 'SF_ERR_CANCELLED' });
    expect(a.done).toBe(2);
    await pa;
    expect(denoiser.calls.every((c) => !c.ids.includes('b'))).toBe(true);
    expect(scheduler.inflightCount + scheduler.pendingCount).toBe(0);
  });

  it('the admission wait holds the first step of an idle scheduler so a burst starts in one call', async () => {
    const clock = new FakeClock();
    const { denoiser, engine, scheduler } = await setUp({ admissionWaitUs: 5_000 }, clock);
    const all = ['a', 'b', 'c'].map((id) => engine.submit(scheduler, work(id, 'k', 1), {}));
    await settle();
    expect(denoiser.calls).toHaveLength(0);
    await clock.advance(5_000);
    expect(denoiser.calls).toEqual([{ ids: ['a', 'b', 'c'], rows: 3 }]);
    await denoiser.runAll();
    await Promise.all(all);
  });

  it('with wavesOnly (request-level batching), a request arriving mid-wave waits for the wave to end', async () => {
    const { denoiser, engine, scheduler } = await setUp({ wavesOnly: true });
    const a = engine.submit(scheduler, work('a', 'k', 3), {});
    await settle();
    const b = engine.submit(scheduler, work('b', 'k', 1), {});
    await denoiser.runAll();
    await Promise.all([a, b]);
    expect(denoiser.calls.map((c) => c.ids)).toEqual([['a'], ['a'], ['a'], ['b']]);
  });

  it('drain waits for running and waiting requests, then refuses new ones', async () => {
    const { denoiser, engine, scheduler } = await setUp({ maxRunning: 1 });
    const done = [engine.submit(scheduler, work('a', 'k', 2), {}), engine.submit(scheduler, work('b', 'k', 2), {})];
    await settle();
    let drained = false;
    const draining = engine.drain().then(() => (drained = true));
    await denoiser.step();
    expect(drained).toBe(false);
    await denoiser.runAll();
    await Promise.all([...done, draining]);
    await expect(engine.submit(scheduler, work('c', 'k', 1), {})).rejects.toMatchObject({ code: 'SF_ERR_DRAINING' });
  });
});
