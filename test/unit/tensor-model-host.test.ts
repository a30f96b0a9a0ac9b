import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ModelContextData } from '../../src/definition/model-context.js';
import { TensorModelHost } from '../../src/inference/tensor-model-host.js';
import type { TensorModelPlan, TensorWireResult } from '../../src/inference/tensor-model-plan.js';
import { ContextServices } from '../../src/runtime/context-services.js';
import { int32, values } from '../fixtures/repository/repository-files.js';

const data: ModelContextData = {
  modelName: 'scale', modelVersion: '1', instanceName: 'scale_0', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: '/m',
  config: { parameters: { scale: { string_value: '2' } } },
};

describe('TensorModelHost', () => {
  it('runs one execution per call, with its compute times', async () => {
    const plan: TensorModelPlan = {
      kind: 'module', file: fileURLToPath(new URL('../fixtures/repository/scale-model.ts', import.meta.url)), maxBatchSize: 4, sessionOptions: {},
      inputs: [{ name: 'INPUT0', datatype: 'INT32', dims: [1], optional: false }],
      outputs: [{ name: 'OUTPUT0', datatype: 'INT32', dims: [1], optional: false }, { name: 'OUTPUT1', datatype: 'INT32', dims: [1], optional: false }],
    };
    const services = new ContextServices(data, () => Promise.reject(new Error('unused')));
    const host = await TensorModelHost.start(plan, services.context);
    const info = { params: {}, query: {}, headers: {} };
    const before = performance.timeOrigin + performance.now();
    const outcome = await host.execute({
      methodName: 'execute',
      batched: true,
      requests: [5, 6].map((v) => ({ payload: { inputs: [int32('INPUT0', [1, 1], [v])], outputs: ['OUTPUT0', 'OUTPUT1'], parameters: {} }, info })),
    });
    expect(outcome.results.map((r) => (r.ok ? (r.value as TensorWireResult).outputs.map(values) : r.error.message))).toEqual([[[10], [2]], [[12], [2]]]);
    expect(outcome.computeStartMs).toBeGreaterThanOrEqual(before);
    expect(outcome.computeEndMs).toBeGreaterThanOrEqual(outcome.computeStartMs);
    await host.finalize();
  });
});
