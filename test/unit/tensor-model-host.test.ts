import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import type { ModelContextData } from '../../src/definition/model-context.js';
import type { StreamedResult, TensorModelPlan, TensorWireResult } from '../../src/wire/tensor-model-plan.js';
import { TensorModelHost } from '../../src/instance/tensor-model-host.js';
import { ContextServices } from '../../src/instance/context-services.js';
import type { StreamEvent } from '../../src/wire/stream-channel.js';
import type { TensorCall } from '../../src/wire/wire-format.js';
import { int32, values } from '../fixtures/repository/repository-files.js';

const data: ModelContextData = {
  modelName: 'scale', modelVersion: '1', instanceName: 'scale_0', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: '/m',
  config: { parameters: { scale: { string_value: '2' } } },
};

describe('TensorModelHost', () => {
  it('runs one execution per tensor call, with its compute times, and refuses an endpoint call', async () => {
    const plan: TensorModelPlan = {
      kind: 'module', file: fileURLToPath(new URL('../fixtures/repository/scale-model.ts', import.meta.url)), maxBatchSize: 4, sessionOptions: {},
      inputs: [{ name: 'INPUT0', datatype: 'INT32', dims: [1], optional: false }],
      outputs: [{ name: 'OUTPUT0', datatype: 'INT32', dims: [1], optional: false }, { name: 'OUTPUT1', datatype: 'INT32', dims: [1], optional: false }],
    };
    const services = new ContextServices(data, () => Promise.reject(new Error('unused')));
    const host = await TensorModelHost.start(plan, services.context);
    const before = performance.timeOrigin + performance.now();
    const outcome = await host.execute({
      kind: 'tensor',
      requests: [5, 6].map((v) => ({ inputs: [int32('INPUT0', [1, 1], [v])], outputs: ['OUTPUT0', 'OUTPUT1'], parameters: {} })),
    });
    expect(outcome.results.map((r) => (r.ok ? (r.value as TensorWireResult).outputs.map(values) : r.error.message))).toEqual([[[10], [2]], [[12], [2]]]);
    expect(outcome.computeStartMs).toBeGreaterThanOrEqual(before);
    expect(outcome.computeEndMs).toBeGreaterThanOrEqual(outcome.computeStartMs);
    const endpointCall = { kind: 'endpoint' as const, methodName: 'predict', batched: false, requests: [{ payload: {}, info: { requestId: 'r1', params: {}, query: {}, headers: {} } }] };
    await expect(host.execute(endpointCall)).rejects.toMatchObject({
      code: 'SF_ERR_EXECUTION_FAILED',
      message: "Model 'scale' failed in predict: a repository model has no endpoint methods",
    });
    await host.finalize();
  });
});

describe('TensorModelHost.openStream', () => {
  const countdownPlan: TensorModelPlan = {
    kind: 'module', file: fileURLToPath(new URL('../fixtures/decoupled/countdown/1/model.ts', import.meta.url)), maxBatchSize: 0, sessionOptions: {},
    inputs: [{ name: 'N', datatype: 'INT32', dims: [1], optional: false }],
    outputs: [{ name: 'OUT', datatype: 'INT32', dims: [1], optional: false }, { name: 'TEXT', datatype: 'BYTES', dims: [1], optional: false }],
  };
  const call = (n: number): TensorCall => ({ kind: 'tensor', requests: [{ inputs: [int32('N', [1], [n])], outputs: ['OUT'], parameters: {} }] });

  it('emits one chunk per response within its credit, then the end', async () => {
    const services = new ContextServices({ ...data, modelName: 'countdown', config: { model_transaction_policy: { decoupled: true } } }, () => Promise.reject(new Error('unused')));
    const host = await TensorModelHost.start(countdownPlan, services.context);
    const events: StreamEvent[] = [];
    const pump = host.openStream(call(3), 2, (event) => events.push(event));
    const running = pump.run();
    const summary = () => events.map((e) => (e.kind === 'chunk' ? values((e.value as StreamedResult).result.outputs[0])[0] : e.kind));
    await vi.waitFor(() => expect(summary()).toEqual([3, 2]));
    // Out of credit: nothing more comes until the consumer grants some.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(summary()).toEqual([3, 2]);
    pump.grant(5);
    await running;
    expect(summary()).toEqual([3, 2, 1, 'end']);
    await host.finalize();
  });

  it('answers an error event for a model that is not decoupled', async () => {
    const services = new ContextServices({ ...data, modelName: 'countdown' }, () => Promise.reject(new Error('unused')));
    const host = await TensorModelHost.start(countdownPlan, services.context);
    const events: StreamEvent[] = [];
    await host.openStream(call(3), 2, (event) => events.push(event)).run();
    expect(events).toEqual([{ kind: 'error', error: expect.objectContaining({ code: 'SF_ERR_EXECUTION_FAILED', message: "Model 'countdown' failed in execute: only a decoupled model.ts / model.js model streams its responses" }) }]);
  });
});
