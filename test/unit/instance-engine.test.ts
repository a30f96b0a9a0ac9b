import { describe, expect, it } from 'vitest';
import { type ValidatedRequest, InstanceEngine, type QueuedTensorRequest } from '../../src/engine/instance-engine.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { normalizeBatchPolicy } from '../../src/spec/batch-policy.js';
import type { InstanceEvents, ModelInstance } from '../../src/engine/model-instance.js';
import { now } from '../../src/wire/epoch-time.js';
import { StreamChannel } from '../../src/wire/stream-channel.js';
import { tensorCall, type ExecuteCall, type ExecuteOutcome } from '../../src/wire/wire-format.js';
import { settle } from '../helpers/settle.js';

/** Instances whose executions and streams the test ends by hand. */
class ManualInstances {
  readonly executions: string[][] = [];
  readonly streams: StreamChannel[] = [];
  private readonly waiting: (() => void)[] = [];
  readonly crash = new Map<number, () => void>();

  factory = (index: number, events: InstanceEvents): ModelInstance => {
    const instance: ModelInstance = {
      index,
      start: async () => undefined,
      stop: async () => undefined,
      execute: (call: ExecuteCall) => {
        const ids = call.kind === 'tensor' ? call.requests.map((r) => r.id!) : [];
        this.executions.push(ids);
        return new Promise<ExecuteOutcome>((resolve) => {
          this.waiting.push(() => resolve({ results: ids.map((id) => ({ ok: true, value: { outputs: [], parameters: { id } } })), computeStartMs: now(), computeEndMs: now() }));
        });
      },
      openStream: () => {
        const channel = new StreamChannel({ grant: () => undefined, cancel: () => channel.push({ kind: 'end' }) });
        this.streams.push(channel);
        return channel;
      },
      openSocket: () => {
        throw new Error('no sockets here');
      },
    };
    this.crash.set(index, () => events.onCrash(instance, 'test crash'));
    return instance;
  };

  async release(): Promise<void> {
    for (const finish of this.waiting.splice(0)) finish();
    await settle();
  }
}

function engine(instances: ManualInstances, restartPolicy = { maxRestarts: 5, windowMs: 60_000 }) {
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const log: string[] = [];
  const e = new InstanceEngine({ name: 'm', version: '1', instanceCount: 1, factory: instances.factory, recorder, log: (_l, m) => log.push(m), restartPolicy });
  const batcher = (owner: string) =>
    e.batcher<QueuedTensorRequest, unknown>(owner, normalizeBatchPolicy({ maxBatchSize: 1 }, owner), (batch) => e.runTensorBatch(batch.map((entry) => entry.payload)), { queueBehind: false });
  return { e, recorder, batcher, log };
}

const request = (id: string): ValidatedRequest => ({ wire: { id, inputs: [], outputs: [], parameters: {} }, rows: 1, signature: 'a' });
const queued = (id: string): QueuedTensorRequest => ({ request: request(id), submittedMs: now() });

describe('InstanceEngine', () => {
  it('feeds every batcher from one pool, taking turns, and counts their executions in one set of statistics', async () => {
    const instances = new ManualInstances();
    const { e, recorder, batcher } = engine(instances);
    const first = batcher('first');
    const second = batcher('second');
    await e.start();
    const results = [e.submit(first, queued('a0'), {}), e.submit(first, queued('a1'), {}), e.submit(first, queued('a2'), {}), e.submit(second, queued('b0'), {})];
    expect(instances.executions).toEqual([['a0']]);
    for (let i = 0; i < 4; i++) await instances.release();
    expect(instances.executions).toEqual([['a0'], ['a1'], ['b0'], ['a2']]);
    await Promise.all(results);
    const [stats] = recorder.statistics('m', '1').model_stats;
    expect([stats.execution_count, stats.inference_stats.success.count]).toEqual([4, 4]);
    expect(e.pendingCount).toBe(0);
  });

  it('fails what every batcher queued once the last instance is past its restart limit', async () => {
    const instances = new ManualInstances();
    const { e, batcher } = engine(instances, { maxRestarts: 0, windowMs: 60_000 });
    const first = batcher('first');
    const second = batcher('second');
    await e.start();
    void e.submit(first, queued('running'), {}).catch(() => undefined);
    const waiting = [e.submit(first, queued('a'), {}), e.submit(second, queued('b'), {})];
    instances.crash.get(0)!();
    for (const pending of waiting) await expect(pending).rejects.toMatchObject({ code: 'SF_ERR_MODEL_UNAVAILABLE', statusCode: 503 });
    expect(e.available).toBe(false);
  });

  it('holds the instance for a stream until it ends, counting its run as one execution when asked, and drain waits for it', async () => {
    const instances = new ManualInstances();
    const { e, recorder, batcher } = engine(instances);
    const first = batcher('first');
    await e.start();
    const opened = e.openStream(queued('s'), tensorCall([request('s').wire]), 1, { countRun: true });
    instances.streams[0].push({ kind: 'chunk', value: 1 });
    await opened;
    const behind = e.submit(first, queued('after'), {});
    await settle();
    expect(instances.executions).toEqual([]);
    let drained = false;
    const drain = e.drain().then(() => (drained = true));
    await settle();
    expect(drained).toBe(false);
    instances.streams[0].push({ kind: 'end' });
    await settle();
    expect(instances.executions).toEqual([['after']]);
    await instances.release();
    await Promise.all([behind, drain]);
    expect(recorder.statistics('m', '1').model_stats[0].execution_count).toBe(2);
  });

  it('counts a batcher that throws before it returns a promise as one failed request, no longer pending', async () => {
    const instances = new ManualInstances();
    const { e, recorder, batcher } = engine(instances);
    const first = batcher('first');
    await e.start();
    first.submit = () => {
      throw new Error('refused at once');
    };
    await expect(e.submit(first, queued('x'), {})).rejects.toThrow('refused at once');
    const [stats] = recorder.statistics('m', '1').model_stats;
    expect(stats.inference_stats.fail.count).toBe(1);
    expect(e.pendingCount).toBe(0);
    expect(await recorder.registry.getSingleMetricAsString('nv_inference_pending_request_count')).toContain('nv_inference_pending_request_count{model="m",version="1"} 0');
  });

  it('cancels streams still open when the drain timeout passes', async () => {
    const instances = new ManualInstances();
    const { e } = engine(instances);
    await e.start();
    const opened = e.openStream(queued('s'), tensorCall([request('s').wire]), 1, { countRun: false });
    instances.streams[0].push({ kind: 'chunk', value: 1 });
    const channel = await opened;
    await e.drain(10);
    await expect(channel.finished).resolves.toBeUndefined();
  });
});
