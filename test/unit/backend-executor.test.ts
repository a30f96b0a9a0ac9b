import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAddSubModel, buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import type { ModelContextData } from '../../src/definition/model-context.js';
import { BackendExecutor } from '../../src/instance/backend-executor.js';
import type { TensorModelPlan, TensorWireRequest, TensorWireResult } from '../../src/wire/tensor-model-plan.js';
import { ContextServices } from '../../src/instance/context-services.js';
import type { WireResult } from '../../src/wire/wire-format.js';
import { int32, range, scratchFolder, tensor, values, writeFiles } from '../fixtures/repository/repository-files.js';

const dir = scratchFolder('backend');
const services: ContextServices[] = [];

function start(plan: TensorModelPlan): Promise<BackendExecutor> {
  const data: ModelContextData = {
    modelName: 'm', modelVersion: '1', instanceName: 'm_0', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: dir, config: {},
  };
  const service = new ContextServices(data, () => Promise.reject(new Error('unused')));
  services.push(service);
  return BackendExecutor.start(plan, service.context);
}

const outputs = (result: WireResult): TensorWireResult['outputs'] => {
  if (!result.ok) throw new Error(result.error.message);
  return (result.value as TensorWireResult).outputs;
};

beforeAll(() => {
  writeFiles(dir, {
    'simple.onnx': buildAddSubModel({ size: 4 }),
    // [batch, 2, 2] in the file, [batch, 4] in the configuration (Triton's reshape).
    'square.onnx': buildOnnxModel({
      inputs: [{ name: 'X', datatype: 'FP32', shape: ['batch', 2, 2] }],
      outputs: [{ name: 'Y', datatype: 'FP32', shape: ['batch', 2, 2] }],
      nodes: [{ op: 'Mul', inputs: ['X', 'X'], outputs: ['Y'] }],
    }),
  });
});

afterAll(async () => {
  await Promise.all(services.map((s) => s.dispose()));
  rmSync(dir, { recursive: true, force: true });
});

describe('BackendExecutor', () => {
  const simple: TensorModelPlan = {
    kind: 'onnx', file: `${dir}/simple.onnx`, maxBatchSize: 8, sessionOptions: { intraOpNumThreads: 1 },
    inputs: [{ name: 'INPUT0', datatype: 'INT32', dims: [4], optional: false }, { name: 'INPUT1', datatype: 'INT32', dims: [4], optional: false }],
    outputs: [{ name: 'OUTPUT0', datatype: 'INT32', dims: [4], optional: false }, { name: 'OUTPUT1', datatype: 'INT32', dims: [4], optional: false }],
  };

  it('runs the requests as one batch and gives each request its rows and outputs', async () => {
    const executor = await start(simple);
    const request = (rows: number, base: number, wanted: string[]): TensorWireRequest => ({
      inputs: [int32('INPUT0', [rows, 4], range(rows * 4, (i) => base + i)), int32('INPUT1', [rows, 4], range(rows * 4, () => 1))],
      outputs: wanted,
      parameters: {},
    });
    const results = await executor.run([request(1, 0, ['OUTPUT0', 'OUTPUT1']), request(2, 100, ['OUTPUT1'])]);
    const [first, second] = results.map(outputs);
    expect(first.map((t) => [t.name, t.shape, values(t)])).toEqual([
      ['OUTPUT0', [1, 4], [1, 2, 3, 4]],
      ['OUTPUT1', [1, 4], [-1, 0, 1, 2]],
    ]);
    expect(second.map((t) => [t.name, t.shape, values(t)])).toEqual([['OUTPUT1', [2, 4], range(8, (i) => 99 + i)]]);
  });

  it('reshapes inputs and outputs between the configuration and the model file', async () => {
    const executor = await start({
      kind: 'onnx', file: `${dir}/square.onnx`, maxBatchSize: 4, sessionOptions: {},
      inputs: [{ name: 'X', datatype: 'FP32', dims: [4], reshape: [2, 2], optional: false }],
      outputs: [{ name: 'Y', datatype: 'FP32', dims: [4], reshape: [2, 2], optional: false }],
    });
    const [result] = await executor.run([{ inputs: [tensor('X', 'FP32', [1, 4], [1, 2, 3, 4])], outputs: ['Y'], parameters: {} }]);
    const [y] = outputs(result);
    expect(y.shape).toEqual([1, 4]);
    expect(values(y)).toEqual([1, 4, 9, 16]);
  });

  it('feeds an unbatched model the request as it is', async () => {
    const executor = await start({ ...simple, maxBatchSize: 0 });
    const [result] = await executor.run([{ inputs: [int32('INPUT0', [1, 4], [1, 1, 1, 1]), int32('INPUT1', [1, 4], [2, 2, 2, 2])], outputs: ['OUTPUT0'], parameters: {} }]);
    expect(values(outputs(result)[0])).toEqual([3, 3, 3, 3]);
  });

  it("fails the execution with the backend error: ONNX Runtime refusing the request's dims is a 400", async () => {
    const executor = await start(simple);
    await expect(executor.run([{ inputs: [int32('INPUT0', [1, 3], [1, 2, 3]), int32('INPUT1', [1, 4], [1, 2, 3, 4])], outputs: ['OUTPUT0'], parameters: {} }]))
      .rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_BACKEND_INPUT_REJECTED', statusCode: 400 }));
  });
});
