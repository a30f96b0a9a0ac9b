import { Worker } from 'node:worker_threads';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ServeFnError } from '../../src/index.js';
import { WorkerInstance } from '../../src/engine/worker-instance.js';
import type { EndpointCall, ExecuteOutcome, WireRequest } from '../../src/wire/wire-format.js';
import type { CrossingInput } from '../fixtures/crossing/crossing-model.js';

const moduleUrl = new URL('../fixtures/crossing/crossing-model.ts', import.meta.url).href;
const context = { modelName: 'crossing', modelVersion: '1', instanceName: 'crossing_0', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu' as const, deviceId: 0, modelDir: '.', config: {} };
let instance: WorkerInstance;

beforeAll(async () => {
  instance = new WorkerInstance(0, moduleUrl, context, { onCrash: () => undefined }, () => Promise.reject(new Error('no infer')));
  await instance.start();
});

afterAll(() => instance.stop());
afterEach(() => vi.restoreAllMocks());

const wire = (payload: CrossingInput | Record<string, unknown>): WireRequest => ({ payload, info: { requestId: 'r1', params: {}, query: {}, headers: {} } });
const call = (...payloads: CrossingInput[]): EndpointCall => ({ kind: 'endpoint', methodName: 'echo', batched: false, requests: payloads.map(wire) });
const values = (outcome: ExecuteOutcome): unknown[] => outcome.results.map((r) => (r.ok ? r.value : r.error.message));

describe('the crossing between the HTTP thread and a worker instance', () => {
  it('sends the calls dispatched in one turn in one postMessage, each answered with its own results', async () => {
    const posted = vi.spyOn(Worker.prototype, 'postMessage');
    const outcomes = Array.from({ length: 8 }, (_, i) => instance.execute(call({ value: i })));
    await Promise.all(outcomes);
    expect(posted).toHaveBeenCalledTimes(1);
    expect((await Promise.all(outcomes)).map(values)).toEqual(Array.from({ length: 8 }, (_, i) => [i]));
  });

  it("sends an unbatched call's results back in one message, each still heard by onResult in order", async () => {
    const emitted = vi.spyOn(Worker.prototype, 'emit');
    const heard: [number, unknown][] = [];
    const outcome = await instance.execute(call(...Array.from({ length: 8 }, (_, i) => ({ value: `v${i}` }))), (index, each) => heard.push([index, values(each)[0]]));
    // One message, as the eight quick calls span far less than the worker's HOLD_MS; a second would
    // only come from a pause (GC) in between. Sent one by one, they were nine (eight and the outcome).
    expect(emitted.mock.calls.filter(([event]) => event === 'message').length).toBeLessThanOrEqual(2);
    expect(heard).toEqual(Array.from({ length: 8 }, (_, i) => [i, `v${i}`]));
    expect(values(outcome)).toEqual(Array.from({ length: 8 }, (_, i) => `v${i}`));
  });

  it('fails only the request that cannot be sent, not the others of its turn', async () => {
    const good = instance.execute(call({ value: 'a' }));
    const bad = instance.execute({ kind: 'endpoint', methodName: 'echo', batched: false, requests: [wire({ value: () => 1 })] });
    const after = instance.execute(call({ value: 'b' }));
    await expect(bad).rejects.toSatisfy((err: unknown) => err instanceof ServeFnError && err.code === 'SF_ERR_BAD_REQUEST');
    expect(values(await good)).toEqual(['a']);
    expect(values(await after)).toEqual(['b']);
  });

  it('fails only the result that cannot be sent back, not the others of its turn', async () => {
    const outcome = await instance.execute(call({ value: 1 }, { unclonable: true, value: 2 }, { value: 3 }));
    expect(outcome.results.map((r) => r.ok)).toEqual([true, false, true]);
    const failed = outcome.results[1];
    expect(!failed.ok && failed.error.code).toBe('SF_ERR_RESPONSE_NOT_SERIALIZABLE');
    expect(values(outcome)).toEqual([1, expect.any(String), 3]);
  });

  it('still transfers the buffers of calls sent together', async () => {
    const buffers = [new Uint8Array(16), new Uint8Array(32)];
    const outcomes = buffers.map((bytes) => instance.execute(call({ bytes })));
    const answers = (await Promise.all(outcomes)).map(values);
    expect(buffers.map((b) => b.byteLength)).toEqual([0, 0]);
    expect(answers).toEqual([[{ bytes: 16, isBuffer: true }], [{ bytes: 32, isBuffer: true }]]);
  });
});
