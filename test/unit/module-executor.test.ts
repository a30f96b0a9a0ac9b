import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelContextData } from '../../src/definition/model-context.js';
import { ModuleExecutor } from '../../src/instance/module-executor.js';
import type { TensorModel } from '../../src/instance/tensor-model-api.js';
import type { TensorModelPlan, TensorWireRequest, TensorWireResult } from '../../src/wire/tensor-model-plan.js';
import { ContextServices } from '../../src/instance/context-services.js';
import type { WireResult } from '../../src/wire/wire-format.js';
import { int32, range, scratchFolder, values, writeFiles } from '../fixtures/repository/repository-files.js';

const plan: TensorModelPlan = {
  kind: 'module',
  file: fileURLToPath(new URL('../fixtures/repository/scale-model.ts', import.meta.url)),
  maxBatchSize: 8,
  inputs: [{ name: 'INPUT0', datatype: 'INT32', dims: [2], optional: false }],
  outputs: [
    { name: 'OUTPUT0', datatype: 'INT32', dims: [2], optional: false },
    { name: 'OUTPUT1', datatype: 'INT32', dims: [1], optional: false },
  ],
  sessionOptions: {},
};

function context(parameters: Record<string, string>): ContextServices {
  const data: ModelContextData = {
    modelName: 'scale', modelVersion: '1', instanceName: 'scale_0', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0,
    modelDir: '/models/scale', config: { parameters: Object.fromEntries(Object.entries(parameters).map(([k, v]) => [k, { string_value: v }])) },
  };
  return new ContextServices(data, () => Promise.reject(new Error('unused')));
}

const request = (values: number[], parameters: Record<string, unknown> = {}, outputs = ['OUTPUT0', 'OUTPUT1']): TensorWireRequest => ({
  id: `r${values[0]}`, inputs: [int32('INPUT0', [values.length / 2, 2], values)], outputs, parameters,
});

function failure(result: WireResult): { code?: string; statusCode?: number; message: string } {
  if (result.ok) throw new Error('expected a failed result');
  return { code: result.error.code, statusCode: result.error.statusCode, message: result.error.message };
}

describe('ModuleExecutor', () => {
  let executor: ModuleExecutor;

  beforeAll(async () => {
    executor = await ModuleExecutor.start(plan, context({ scale: '3' }).context);
  });

  afterAll(() => executor.finalize());

  it('calls execute with every request and keeps the requested outputs, in order', async () => {
    const results = await executor.run([request([1, 2]), request([3, 4, 5, 6], {}, ['OUTPUT1', 'OUTPUT0'])]);
    expect(results.map((r) => r.ok)).toEqual([true, true]);
    const [first, second] = results.map((r) => (r.ok ? (r.value as TensorWireResult) : undefined)!);
    expect(values(first.outputs[0])).toEqual([3, 6]);
    expect(values(first.outputs[1])).toEqual([2]);
    expect(first.parameters).toEqual({ scale: 3 });
    expect(second.outputs.map((t) => t.name)).toEqual(['OUTPUT1', 'OUTPUT0']);
    expect(values(second.outputs[1])).toEqual([9, 12, 15, 18]);
  });

  it('fails one request with its own error and answers the others', async () => {
    const results = await executor.run([request([1, 1], { fail: 'error' }), request([2, 2]), request([1, 1], { fail: 'status' }), request([1, 1], { fail: 'string' })]);
    expect(failure(results[0])).toEqual({ code: 'SF_ERR_EXECUTION_FAILED', statusCode: 500, message: "Model 'scale' failed in execute: request r1 refused" });
    expect(results[1].ok).toBe(true);
    expect(failure(results[2])).toEqual({ code: 'SF_ERR_BAD_REQUEST', statusCode: 400, message: 'values must be positive' });
    expect(failure(results[3]).message).toBe("Model 'scale' failed in execute: plain words");
  });

  it.each([
    ['unknown-output', "returned output 'EXTRA', which config.pbtxt does not declare"],
    ['wrong-datatype', "output 'OUTPUT0': Tensor 'OUTPUT0': expected datatype INT32, got FP32."],
    ['missing', "returned no output 'OUTPUT0', which the request asked for"],
  ])('checks the outputs of a response (%s)', async (fail, why) => {
    const [result] = await executor.run([request([1, 2], { fail })]);
    expect(failure(result)).toEqual({ code: 'SF_ERR_EXECUTION_FAILED', statusCode: 500, message: `Model 'scale' failed in execute: ${why}` });
  });

  it('fails the whole execution when execute throws or answers the wrong number of requests', async () => {
    await expect(executor.run([request([1, 2], { fail: 'throw' })])).rejects.toThrow('the whole batch failed');
    await expect(executor.run([request([1, 2], { fail: 'short' }), request([1, 2])])).rejects.toMatchObject({
      code: 'SF_ERR_BATCH_RESULT_LENGTH',
      message: 'scale.execute returned 0 results for a batch of 2 requests: a batched method (@Batch, or execute(requests)) must return one result (or Error) per request, in order.',
    });
  });

  it('fails the whole execution with the @Batch code when execute returns something other than an array', async () => {
    const notAnArray = ModuleExecutor.forTensorInterface({ execute: () => ({ outputs: [] }) } as unknown as TensorModel, { maxBatchSize: 0, outputs: [] }, 'plain');
    await expect(notAnArray.run([request([1, 2])])).rejects.toMatchObject({ code: 'SF_ERR_BATCH_RESULT_NOT_ARRAY', message: 'plain.execute must return an array for its batch, got Object.' });
  });
});

describe('ModuleExecutor.start', () => {
  const dir = scratchFolder('module');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('wraps an initialize error with the model and instance', async () => {
    await expect(ModuleExecutor.start(plan, context({ fail_initialize: '1' }).context)).rejects.toThrow(
      expect.objectContaining({ code: 'SF_ERR_INITIALIZE_FAILED', message: "Model 'scale' instance 0 failed in initialize(): initialize refused" }),
    );
  });

  it('finds the only exported class with execute, and refuses a module without one', async () => {
    writeFiles(dir, {
      'named.js': 'export const helper = 1;\nexport class Named { execute(requests) { return requests.map(() => ({ outputs: [] })); } }\n',
      'none.js': 'export default class NotAModel { run() {} }\n',
    });
    const named = await ModuleExecutor.start({ ...plan, file: `${dir}/named.js`, outputs: [] }, context({}).context);
    const [result] = await named.run([request(range(2), {}, [])]);
    expect(result).toEqual({ ok: true, value: { outputs: [], parameters: undefined } });
    await expect(ModuleExecutor.start({ ...plan, file: `${dir}/none.js` }, context({}).context)).rejects.toThrow(
      `Model 'scale' instance 0 failed in initialize(): ${dir}/none.js exports no class with an execute(requests) method; export one as the default export`,
    );
  });
});

describe('ModuleExecutor for a decoupled model', () => {
  const dir = scratchFolder('decoupled-module');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const decoupledPlan = (file: string): TensorModelPlan => ({
    ...plan, file, maxBatchSize: 0, inputs: [{ name: 'N', datatype: 'INT32', dims: [1], optional: false }],
    outputs: [{ name: 'OUT', datatype: 'INT32', dims: [1], optional: false }],
  });
  const decoupledContext = (): ContextServices => {
    const data: ModelContextData = {
      modelName: 'steps', modelVersion: '1', instanceName: 'steps_0', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0,
      modelDir: dir, config: { model_transaction_policy: { decoupled: true } },
    };
    return new ContextServices(data, () => Promise.reject(new Error('unused')));
  };
  const stepsRequest = (n: number): TensorWireRequest => ({ inputs: [int32('N', [1], [n])], outputs: ['OUT'], parameters: {} });

  it('streams the checked responses of a sync generator and of an async one', async () => {
    writeFiles(dir, {
      'sync.js': 'export default class Steps { *execute(r) { for (let i = 1; i <= r.input("N").data[0]; i++) yield { outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: Int32Array.of(i) }] }; } }\n',
      'async.js': 'export default class Steps { async *execute(r) { for (let i = 1; i <= r.input("N").data[0]; i++) yield { outputs: [{ name: "OUT", datatype: "INT32", shape: [1], data: [i * 10] }], final: i === 2 }; } }\n',
    });
    const sync = await ModuleExecutor.start(decoupledPlan(`${dir}/sync.js`), decoupledContext().context);
    expect(sync.decoupled).toBe(true);
    const seen: [number[], boolean][] = [];
    for await (const { result, final } of sync.stream(stepsRequest(3))) seen.push([values(result.outputs[0]), final]);
    expect(seen).toEqual([[[1], false], [[2], false], [[3], false]]);
    const asyncSteps = await ModuleExecutor.start(decoupledPlan(`${dir}/async.js`), decoupledContext().context);
    const finals: [number[], boolean][] = [];
    for await (const { result, final } of asyncSteps.stream(stepsRequest(5))) finals.push([values(result.outputs[0]), final]);
    expect(finals).toEqual([[[10], false], [[20], true]]);
  });

  it('run() (warmup) answers each request with its last response, or an empty one', async () => {
    const executor = await ModuleExecutor.start(decoupledPlan(`${dir}/sync.js`), decoupledContext().context);
    const [three, none] = await executor.run([stepsRequest(3), stepsRequest(0)]);
    expect(three.ok && values((three.value as TensorWireResult).outputs[0])).toEqual([3]);
    expect(none).toEqual({ ok: true, value: { outputs: [] } });
  });

  it('fails a request whose execute returns something other than an iterable', async () => {
    writeFiles(dir, { 'promise.js': 'export default class Steps { async execute() { return [] } }\n' });
    const executor = await ModuleExecutor.start(decoupledPlan(`${dir}/promise.js`), decoupledContext().context);
    const [result] = await executor.run([stepsRequest(1)]);
    expect(failure(result)).toEqual({
      code: 'SF_ERR_EXECUTION_FAILED', statusCode: 500,
      message: "Model 'steps' failed in execute: returned Promise; a decoupled model's execute(request) returns an iterable of responses, e.g. as an async generator (async *execute)",
    });
  });
});
