import { describe, expect, it } from 'vitest';
import type { ServeFnError } from '../../src/errors/index.js';
import { type ValidatedRequest, InstanceEngine } from '../../src/engine/instance-engine.js';
import type { SequenceControlInput } from '../../src/engine/sequence-controls.js';
import { SequenceScheduler } from '../../src/engine/sequence-scheduler.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import type { Clock } from '../../src/engine/clock.js';
import type { RestartPolicy } from '../../src/spec/restart-policy.js';
import { settle } from '../helpers/settle.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { ManualTensorInstances } from '../helpers/manual-tensor-instances.js';

/** A clock whose time never moves: these tests do not reach the idle limit. */
const stillClock: Clock = { now: () => 0, setTimer: () => undefined, clearTimer: () => undefined };

function setup(options: { instances?: number; maxBatchSize?: number; controls?: SequenceControlInput[]; restartPolicy?: RestartPolicy; clock?: Clock; direct?: { maxQueueDelayUs: number; minimumSlotUtilization: number } } = {}) {
  const instances = new ManualTensorInstances();
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const logs: string[] = [];
  const log = (level: string, message: string): void => void logs.push(`${level}: ${message}`);
  const instanceCount = options.instances ?? 2;
  const engine = new InstanceEngine({ name: 'acc', version: '1', instanceCount, factory: instances.factory, recorder, log, clock: options.clock ?? stillClock, restartPolicy: options.restartPolicy });
  const sequences = new SequenceScheduler(engine, instanceCount, { name: 'acc', maxBatchSize: options.maxBatchSize ?? 0, idleUs: 1_000_000, controls: options.controls ?? [], log, ...(options.direct ? { direct: options.direct } : {}) });
  return { instances, recorder, engine, sequences, logs };
}

function request(id: string, parameters: Record<string, unknown>, rows = 1, signature = ''): ValidatedRequest {
  return { wire: { id, inputs: [], outputs: [], parameters }, rows, signature };
}

const seq = (sequence_id: number | string, flags: 'start' | 'end' | 'both' | '' = ''): Record<string, unknown> => ({
  sequence_id,
  ...(flags === 'start' || flags === 'both' ? { sequence_start: true } : {}),
  ...(flags === 'end' || flags === 'both' ? { sequence_end: true } : {}),
});

async function failure(promise: Promise<unknown>): Promise<ServeFnError> {
  return promise.then(() => {
    throw new Error('expected a rejection');
  }, (err: unknown) => err as ServeFnError);
}

describe('SequenceScheduler', () => {
  it('keeps each sequence on its instance and runs its requests one at a time, in arrival order', async () => {
    const { instances, engine, sequences } = setup();
    await engine.start();
    const results = [
      sequences.submit(request('a1', seq(1, 'start'))),
      sequences.submit(request('b1', seq(2, 'start'))),
      sequences.submit(request('a2', seq(1))),
      sequences.submit(request('b2', seq(2))),
      sequences.submit(request('a3', seq(1, 'end'))),
    ];
    expect(instances.trace).toEqual(['0: a1', '1: b1']);
    await instances.finish();
    expect(instances.trace.slice(2)).toEqual(['0: a2', '1: b2']);
    await instances.finish();
    expect(instances.trace.slice(4)).toEqual(['0: a3']);
    await instances.finish();
    expect(await Promise.all(results)).toEqual(['a1', 'b1', 'a2', 'b2', 'a3'].map((id) => ({ outputs: [], parameters: { id } })));
    expect(sequences.liveSequences).toEqual([0, 1]);
  });

  it('batches the oldest waiting request of each sequence on an instance, never two of one sequence', async () => {
    const { instances, engine, sequences } = setup({ instances: 1, maxBatchSize: 4 });
    await engine.start();
    const results = [
      sequences.submit(request('a1', seq(1, 'start'))),
      sequences.submit(request('b1', seq(2, 'start'))),
      sequences.submit(request('a2', seq(1))),
      sequences.submit(request('b2', seq(2))),
      sequences.submit(request('c1', seq(3, 'start'))),
    ];
    await instances.finish();
    await instances.finish();
    await instances.finish();
    expect(instances.trace).toEqual(['0: a1', '0: b1 a2 c1', '0: b2']);
    await Promise.all(results);
  });

  it('batches only sequences whose inputs have the shapes of the oldest; the others go in a later execution', async () => {
    const { instances, engine, sequences } = setup({ instances: 1, maxBatchSize: 4 });
    await engine.start();
    const results = [
      sequences.submit(request('a1', seq(1, 'start'), 1, 'x')),
      sequences.submit(request('b1', seq(2, 'start'), 1, 'y')),
      sequences.submit(request('c1', seq(3, 'start'), 1, 'x')),
      sequences.submit(request('d1', seq(4, 'start'), 1, 'y')),
    ];
    for (let i = 0; i < 3; i++) await instances.finish();
    expect(instances.trace).toEqual(['0: a1', '0: b1 d1', '0: c1']);
    await Promise.all(results);
  });

  it("waits, under the direct strategy's delay, for every active sequence of the instance to have a request ready, then runs them as one execution", async () => {
    const clock = new FakeClock();
    const { instances, engine, sequences } = setup({ instances: 1, maxBatchSize: 4, clock, direct: { maxQueueDelayUs: 5000, minimumSlotUtilization: 1 } });
    await engine.start();
    const results = [sequences.submit(request('a1', seq(1, 'start'))), sequences.submit(request('b1', seq(2, 'start'))), sequences.submit(request('c1', seq(3, 'start')))];
    // The first sequence is the only active one when it arrives: it is all there is to wait for.
    expect(instances.trace).toEqual(['0: a1']);
    await instances.finish();
    // b1 and c1 are ready, a is active with nothing ready: the idle instance waits for it.
    expect(instances.trace).toEqual(['0: a1']);
    results.push(sequences.submit(request('a2', seq(1))));
    await settle();
    expect(instances.trace).toEqual(['0: a1', '0: b1 c1 a2']);
    await instances.finish();
    results.push(sequences.submit(request('b2', seq(2))), sequences.submit(request('c2', seq(3, 'end'))));
    await clock.advance(4999);
    expect(instances.trace).toHaveLength(2);
    // The delay passed with a's request still missing: what is ready goes.
    await clock.advance(1);
    expect(instances.trace).toEqual(['0: a1', '0: b1 c1 a2', '0: b2 c2']);
    await instances.finish();
    await Promise.all(results);
  });

  it('does not wait for sequences beyond max_batch_size, nor while draining', async () => {
    const clock = new FakeClock();
    const { instances, engine, sequences } = setup({ instances: 1, maxBatchSize: 2, clock, direct: { maxQueueDelayUs: 5000, minimumSlotUtilization: 1 } });
    await engine.start();
    const results = [sequences.submit(request('a1', seq(1, 'start'))), sequences.submit(request('b1', seq(2, 'start'))), sequences.submit(request('c1', seq(3, 'start')))];
    await instances.finish();
    // Two of the three active sequences fill max_batch_size 2: no wait.
    expect(instances.trace).toEqual(['0: a1', '0: b1 c1']);
    await instances.finish();
    results.push(sequences.submit(request('b2', seq(2, 'end'))));
    await settle();
    expect(instances.trace).toHaveLength(2);
    const drained = engine.drain();
    await settle();
    expect(instances.trace).toEqual(['0: a1', '0: b1 c1', '0: b2']);
    await instances.finish();
    await Promise.all(results);
    await drained;
  });

  it('hands the model the correlation id and flags, without the sequence parameters', async () => {
    const { instances, engine, sequences } = setup();
    await engine.start();
    const first = sequences.submit(request('x', { ...seq('user-7', 'start'), note: 'kept' }));
    expect(instances.requests[0][0]).toEqual({
      id: 'x', inputs: [], outputs: [], parameters: { note: 'kept' }, sequence: { correlationId: 'user-7', start: true, end: false },
    });
    await instances.finish();
    await first;
    const last = sequences.submit(request('y', seq('user-7', 'end')));
    expect(instances.requests[1][0].sequence).toEqual({ correlationId: 'user-7', start: false, end: true });
    await instances.finish();
    await last;
  });

  it('feeds the configured control inputs: START, END, READY and CORRID', async () => {
    const controls: SequenceControlInput[] = [
      { name: 'START', kind: 'CONTROL_SEQUENCE_START', datatype: 'INT32', falseTrue: [0, 1] },
      { name: 'END', kind: 'CONTROL_SEQUENCE_END', datatype: 'FP32', falseTrue: [0, 1] },
      { name: 'READY', kind: 'CONTROL_SEQUENCE_READY', datatype: 'BOOL', falseTrue: [false, true] },
      { name: 'CORRID', kind: 'CONTROL_SEQUENCE_CORRID', datatype: 'UINT64' },
    ];
    const { instances, engine, sequences } = setup({ maxBatchSize: 8, controls });
    await engine.start();
    const first = sequences.submit(request('s', seq(77, 'start')));
    const tensors = instances.requests[0][0].inputs.map((t) => [t.name, t.datatype, t.shape, [...t.data]]);
    expect(tensors).toEqual([
      ['START', 'INT32', [1, 1], [1]],
      ['END', 'FP32', [1, 1], [0]],
      ['READY', 'BOOL', [1, 1], [1]],
      ['CORRID', 'UINT64', [1, 1], [77n]],
    ]);
    await instances.finish();
    await first;
    const last = sequences.submit(request('e', seq(77, 'end')));
    expect(instances.requests[1][0].inputs.map((t) => [t.name, [...t.data]])).toEqual([['START', [0]], ['END', [1]], ['READY', [1]], ['CORRID', [77n]]]);
    await instances.finish();
    await last;
    const err = await failure(sequences.submit(request('str', seq('abc', 'start'))));
    expect(err.message).toBe("sequence_id 'abc' is a string, but model 'acc' takes its correlation id as UINT64 in control input 'CORRID'; send an integer sequence_id");
  });

  it('refuses requests that break the sequence rules with 400s, before they count or run', async () => {
    const { instances, engine, sequences, recorder } = setup({ maxBatchSize: 8 });
    await engine.start();
    const unknown = await failure(sequences.submit(request('u', seq(5))));
    expect([unknown.code, unknown.statusCode]).toEqual(['SF_ERR_SEQUENCE_NOT_STARTED', 400]);
    const missing = await failure(sequences.submit(request('m', {})));
    expect([missing.code, missing.message]).toEqual(['SF_ERR_SEQUENCE_ID_MISSING', "inference request to model 'acc' must specify a non-zero or non-empty correlation ID"]);
    const batch = await failure(sequences.submit(request('b', seq(6, 'start'), 2)));
    expect([batch.code, batch.statusCode, batch.message]).toEqual(['SF_ERR_BAD_REQUEST', 400, "inference request to model 'acc' must specify batch-size 1 due to requirements of sequence batcher"]);
    expect(sequences.liveSequences).toEqual([0, 0]);
    expect(instances.calls).toEqual([]);
    expect(recorder.statistics('acc', '1').model_stats[0].inference_stats.fail.count).toBe(0);
  });

  it('takes a cancelled request out of its queue and runs the rest', async () => {
    const { instances, engine, sequences } = setup({ instances: 1 });
    await engine.start();
    const running = sequences.submit(request('a1', seq(1, 'start')));
    const abort = new AbortController();
    const cancelled = sequences.submit(request('b1', seq(2, 'start')), { signal: abort.signal });
    const next = sequences.submit(request('a2', seq(1)));
    abort.abort();
    expect((await failure(cancelled)).code).toBe('SF_ERR_CANCELLED');
    await instances.finish();
    await instances.finish();
    expect(instances.trace).toEqual(['0: a1', '0: a2']);
    await Promise.all([running, next]);
  });

  it('forgets the sequences of an instance that crashed, as soon as it crashed', async () => {
    const { instances, engine, sequences, logs } = setup();
    await engine.start();
    const a = sequences.submit(request('a1', seq(1, 'start')));
    const b = sequences.submit(request('b1', seq(2, 'start')));
    await instances.finish();
    await Promise.all([a, b]);
    instances.events.get(1)!.onCrash(instances.made.get(1)!, 'test crash');
    await settle();
    expect(sequences.liveSequences).toEqual([1, 0]);
    expect(logs).toContain("warn: model 'acc' instance 1 stopped: its 1 live sequence(s) lost their state and must START again");
    expect((await failure(sequences.submit(request('b2', seq(2))))).code).toBe('SF_ERR_SEQUENCE_NOT_STARTED');
  });

  it('starts sequences on an instance again once it is back from its restart', async () => {
    const { instances, engine, sequences } = setup();
    await engine.start();
    instances.events.get(1)!.onCrash(instances.made.get(1)!, 'test crash');
    await settle();
    const started = [sequences.submit(request('a1', seq(1, 'start'))), sequences.submit(request('b1', seq(2, 'start')))];
    expect(instances.trace).toEqual(['0: a1', '1: b1']);
    await instances.finish();
    await Promise.all(started);
    expect(sequences.liveSequences).toEqual([1, 1]);
  });

  it('fails the requests waiting for an instance past its restart limit, starts sequences elsewhere, and refuses all once none is left', async () => {
    const { instances, engine, sequences } = setup({ restartPolicy: { maxRestarts: 0, windowMs: 60_000 } });
    await engine.start();
    void sequences.submit(request('a1', seq(1, 'start')));
    const waiting = sequences.submit(request('a2', seq(1)));
    instances.events.get(0)!.onCrash(instances.made.get(0)!, 'test crash');
    const held = await failure(waiting);
    expect([held.code, held.statusCode]).toEqual(['SF_ERR_INSTANCE_RESTART_LIMIT', 503]);

    expect(engine.available).toBe(true);
    const other = sequences.submit(request('b1', seq(2, 'start')));
    expect(instances.trace.at(-1)).toBe('1: b1');
    await instances.finish();
    await other;

    instances.events.get(1)!.onCrash(instances.made.get(1)!, 'test crash');
    expect(engine.available).toBe(false);
    expect((await failure(sequences.submit(request('c1', seq(3, 'start'))))).code).toBe('SF_ERR_MODEL_UNAVAILABLE');
  });

  it('drains running requests, then refuses new ones', async () => {
    const { instances, engine, sequences } = setup();
    await engine.start();
    const running = sequences.submit(request('a1', seq(1, 'start')));
    const drained = engine.drain();
    expect((await failure(sequences.submit(request('a2', seq(1))))).code).toBe('SF_ERR_DRAINING');
    await instances.finish();
    await drained;
    await expect(running).resolves.toEqual({ outputs: [], parameters: { id: 'a1' } });
    await engine.stop();
  });

  it('reports its live sequences in serve_fn_sequences_live: up at START, down at END', async () => {
    const { instances, engine, sequences, recorder } = setup();
    await engine.start();
    const live = async (): Promise<number | undefined> => (await recorder.registry.getSingleMetric('serve_fn_sequences_live')!.get()).values.find((v) => v.labels.model === 'acc')?.value;
    const first = [sequences.submit(request('a1', seq(1, 'start'))), sequences.submit(request('b1', seq(2, 'start')))];
    expect(await live()).toBe(2);
    await instances.finish();
    await Promise.all(first);
    const ended = sequences.submit(request('a2', seq(1, 'end')));
    expect(await live()).toBe(1);
    await instances.finish();
    await ended;
    await engine.stop();
  });
});
