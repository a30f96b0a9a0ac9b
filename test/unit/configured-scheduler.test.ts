import { describe, expect, it } from 'vitest';
import { type ValidatedRequest, InstanceEngine } from '../../src/engine/instance-engine.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { schedulerFor } from '../../src/model-repository/configured-scheduler.js';
import { parseModelConfig } from '../../src/model-repository/model-config.js';
import type { RestartPolicy } from '../../src/spec/restart-policy.js';
import type { ServeFnError } from '../../src/errors/index.js';
import { settle } from '../helpers/settle.js';
import { ManualTensorInstances } from '../helpers/manual-tensor-instances.js';

/** A model of up to 4 rows per execution, batching up to 4 requests, on its engine; `extra` adds to its config.pbtxt. */
function runtime(instances: ManualTensorInstances, count = 1, restartPolicy?: RestartPolicy, extra = '') {
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const engine = new InstanceEngine({ name: 'm', version: '1', instanceCount: count, factory: instances.factory, recorder, log: () => undefined, restartPolicy });
  const { config } = parseModelConfig(`name: "m"\nmax_batch_size: 4\ndynamic_batching {}\n${extra}`, 'config.pbtxt');
  const scheduler = schedulerFor(config, '1', engine, () => undefined);
  if (scheduler.decoupled) throw new Error('expected a model answering once');
  return { engine, rt: scheduler.requests, recorder };
}

const request = (id: string, signature: string, rows = 1): ValidatedRequest => ({ wire: { id, inputs: [], outputs: [], parameters: {} }, rows, signature });

describe('schedulerFor', () => {
  it('runs each batch as one execution (arrival order, one signature, at most max_batch_size rows) and counts it once', async () => {
    const instances = new ManualTensorInstances();
    const { engine, rt, recorder } = runtime(instances);
    await engine.start();
    const first = rt.submit(request('r0', 'a'));
    // r1 and r3 share a signature but not a batch: r2 comes between them (Triton's rule); r5 does not fit beside r3 and r4.
    const queued = [rt.submit(request('r1', 'a', 3)), rt.submit(request('r2', 'b')), rt.submit(request('r3', 'a')), rt.submit(request('r4', 'a', 2)), rt.submit(request('r5', 'a', 2))];
    for (let i = 0; i < 6 && instances.calls.length > i; i++) await instances.release();
    const results = await Promise.all([first, ...queued]);
    expect(results.map((r) => r.parameters)).toEqual([{ id: 'r0' }, { id: 'r1' }, { id: 'r2' }, { id: 'r3' }, { id: 'r4' }, { id: 'r5' }]);
    expect(instances.calls.map((c) => c.ids)).toEqual([['r0'], ['r1'], ['r2'], ['r3', 'r4'], ['r5']]);
    const [stats] = recorder.statistics('m', '1').model_stats;
    expect(stats.execution_count).toBe(instances.calls.length);
    expect(stats.inference_count).toBe(1 + 3 + 1 + 1 + 2 + 2);
    expect(stats.inference_stats.success.count).toBe(6);
    expect(stats.batch_stats.map((b) => [b.batch_size, b.compute_infer.count])).toEqual([[1, 2], [2, 1], [3, 2]]);
  });

  it('fails queued requests once the last instance is past its restart limit', async () => {
    const instances = new ManualTensorInstances();
    const { engine, rt } = runtime(instances, 1, { maxRestarts: 0, windowMs: 60_000 });
    await engine.start();
    void rt.submit(request('running', 'a'));
    const queued = rt.submit(request('queued', 'a'));
    await settle();
    instances.crash.get(0)!();
    await expect(queued).rejects.toMatchObject({ code: 'SF_ERR_MODEL_UNAVAILABLE', statusCode: 503 });
    expect(engine.available).toBe(false);
    await expect(rt.submit(request('late', 'a'))).rejects.toMatchObject({ code: 'SF_ERR_MODEL_UNAVAILABLE' });
  });

  it('fails only the requests of an execution that failed', async () => {
    const instances = new ManualTensorInstances();
    const { engine, rt, recorder } = runtime(instances);
    await engine.start();
    const blocker = rt.submit(request('r0', 'a'));
    const good = rt.submit(request('ok', 'a'));
    const bad = rt.submit(request('bad', 'b')).catch((err: Error) => err);
    instances.failIds.add('bad');
    await instances.release();
    await instances.release();
    await instances.release();
    await blocker;
    await expect(good).resolves.toMatchObject({ parameters: { id: 'ok' } });
    expect(((await bad) as Error).message).toBe("Backend 'onnxruntime' failed to run 'm': boom");
    const [stats] = recorder.statistics('m', '1').model_stats;
    expect(stats.inference_stats.fail.count).toBe(1);
  });

  it('runs warmup requests once on every instance, outside the metrics', async () => {
    const instances = new ManualTensorInstances();
    const { engine, rt, recorder } = runtime(instances, 3);
    await engine.start();
    const warm = engine.runOnEachInstance(() => [{ id: 'w', inputs: [], outputs: [], parameters: {} }]);
    await instances.release();
    expect(await warm).toHaveLength(3);
    expect(instances.calls.map((c) => c.instance).sort()).toEqual([0, 1, 2]);
    expect(recorder.statistics('m', '1').model_stats[0].execution_count).toBe(0);
  });

  it('refuses sequence parameters with a 400, since the model has no sequence_batching, and lets 0 / false pass', async () => {
    const instances = new ManualTensorInstances();
    const { engine, rt } = runtime(instances);
    await engine.start();
    const withParameters = (parameters: Record<string, unknown>): ValidatedRequest => ({ ...request('s', 'a'), wire: { ...request('s', 'a').wire, parameters } });
    const refused = (await rt.submit(withParameters({ sequence_id: 12, sequence_start: true })).then(() => undefined, (err: unknown) => err)) as ServeFnError;
    expect([refused.code, refused.statusCode, refused.message]).toEqual([
      'SF_ERR_SEQUENCE_UNSUPPORTED', 400, "inference request to model 'm' sets 'sequence_id', but the model is not stateful: its configuration has no sequence_batching",
    ]);
    await expect(rt.submit(withParameters({ sequence_end: true }))).rejects.toThrow("sets 'sequence_end'");
    expect(instances.calls).toEqual([]);
    const plain = rt.submit(withParameters({ sequence_id: 0, sequence_start: false }));
    await instances.release();
    await expect(plain).resolves.toMatchObject({ parameters: { id: 's' } });
  });

  it('drains queued requests and then refuses new ones', async () => {
    const instances = new ManualTensorInstances();
    const { engine, rt } = runtime(instances);
    await engine.start();
    const running = rt.submit(request('r0', 'a'));
    const drained = engine.drain();
    await expect(rt.submit(request('late', 'a'))).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_DRAINING' }));
    await instances.release();
    await drained;
    await expect(running).resolves.toMatchObject({ parameters: { id: 'r0' } });
  });
});
