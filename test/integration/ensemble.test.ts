import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import type { InferResponse } from '../../src/inference/inference-model.js';
import type { FolderModelRepository } from '../../src/model-repository/folder-model-repository.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { int32, range, scratchFolder, SIMPLE_CONFIG, values, writeFiles } from '../fixtures/repository/repository-files.js';

const reexport = (fixture: string): string => `export { default } from '${new URL(`../fixtures/repository/${fixture}`, import.meta.url).href}';\n`;

const SCALE = `
backend: "serve-fn"
max_batch_size: 8
parameters { key: "scale" value { string_value: "3" } }
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 1 ] } ]`;

const IO = `
platform: "ensemble"
max_batch_size: 8
input [ { name: "A" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "SCALED_SUM" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "DIFF" data_type: TYPE_INT32 dims: [ 16 ] } ]`;

const ADD_SUB_STEP = 'model_name: "simple" model_version: -1 input_map [ { key: "INPUT0" value: "A" }, { key: "INPUT1" value: "B" } ]';

/** simple (ONNX) adds and subtracts A and B; scale (model.ts) triples the sum; a third step triples A alone. */
const PIPELINE = `${IO.replace(
  'output [',
  'output [ { name: "SCALED_A" data_type: TYPE_INT32 dims: [ 16 ] }, ',
)}
ensemble_scheduling { step [
  { ${ADD_SUB_STEP} output_map [ { key: "OUTPUT0" value: "sum" }, { key: "OUTPUT1" value: "DIFF" } ] },
  { model_name: "scale" model_version: -1 input_map { key: "INPUT0" value: "sum" } output_map { key: "OUTPUT0" value: "SCALED_SUM" } },
  { model_name: "scale" model_version: -1 input_map { key: "INPUT0" value: "A" } output_map { key: "OUTPUT0" value: "SCALED_A" } }
] }`;

/** Ensembles that must be refused, each with the reason. */
const INVALID: Record<string, [steps: string, reason: string, io?: string]> = {
  no_steps: ['', 'ensemble_scheduling has no step'],
  unknown_model: [
    `{ model_name: "missing" model_version: -1 input_map { key: "X" value: "A" } output_map { key: "Y" value: "SCALED_SUM" } }`,
    "step 0 (model 'missing') uses a model that is not loaded; load it before the ensemble",
  ],
  unmapped_input: [
    `{ model_name: "simple" model_version: -1 input_map { key: "INPUT0" value: "A" } output_map { key: "OUTPUT0" value: "SCALED_SUM" } }`,
    "step 0 (model 'simple') leaves the model's input 'INPUT1' unmapped",
  ],
  datatype_mismatch: [
    `{ ${ADD_SUB_STEP} output_map [ { key: "OUTPUT0" value: "SCALED_SUM" }, { key: "OUTPUT1" value: "DIFF" } ] }`,
    "ensemble input 'A' is FP32, but step 0 (model 'simple') input 'INPUT0' expects INT32",
    IO.replace('{ name: "A" data_type: TYPE_INT32', '{ name: "A" data_type: TYPE_FP32'),
  ],
  shape_mismatch: [
    `{ ${ADD_SUB_STEP} output_map [ { key: "OUTPUT0" value: "SCALED_SUM" }, { key: "OUTPUT1" value: "DIFF" } ] }`,
    "ensemble input 'B' has shape [-1,8], but step 0 (model 'simple') input 'INPUT1' expects [-1,16]",
    IO.replace('{ name: "B" data_type: TYPE_INT32 dims: [ 16 ] }', '{ name: "B" data_type: TYPE_INT32 dims: [ 8 ] }'),
  ],
  never_produced: [
    `{ ${ADD_SUB_STEP} output_map { key: "OUTPUT0" value: "SCALED_SUM" } }`,
    "output 'DIFF' is never produced by any step",
  ],
  unknown_tensor: [
    `{ ${ADD_SUB_STEP} output_map [ { key: "OUTPUT0" value: "SCALED_SUM" }, { key: "OUTPUT1" value: "DIFF" } ] },
     { model_name: "scale" model_version: -1 input_map { key: "INPUT0" value: "nowhere" } output_map { key: "OUTPUT0" value: "extra" } }`,
    "step 1 (model 'scale') reads 'nowhere', which is neither an ensemble input nor an output of any step",
  ],
  produced_twice: [
    `{ ${ADD_SUB_STEP} output_map [ { key: "OUTPUT0" value: "SCALED_SUM" }, { key: "OUTPUT1" value: "DIFF" } ] },
     { model_name: "scale" model_version: -1 input_map { key: "INPUT0" value: "A" } output_map { key: "OUTPUT0" value: "DIFF" } }`,
    "tensor 'DIFF' is produced twice: by tensor 'DIFF' (step 0 (model 'simple') output 'OUTPUT1') and by step 1 (model 'scale') output 'OUTPUT0'",
  ],
  cycle: [
    `{ model_name: "simple" model_version: -1 input_map [ { key: "INPUT0" value: "A" }, { key: "INPUT1" value: "loop" } ] output_map [ { key: "OUTPUT0" value: "sum" }, { key: "OUTPUT1" value: "DIFF" } ] },
     { model_name: "scale" model_version: -1 input_map { key: "INPUT0" value: "sum" } output_map { key: "OUTPUT0" value: "loop" } },
     { model_name: "scale" model_version: -1 input_map { key: "INPUT0" value: "B" } output_map { key: "OUTPUT0" value: "SCALED_SUM" } }`,
    "its steps form a cycle: step 0 (model 'simple') → step 1 (model 'scale') → step 0 (model 'simple')",
  ],
};

const root = scratchFolder('ensemble-it');
writeFiles(root, {
  'simple/config.pbtxt': SIMPLE_CONFIG,
  'simple/1/model.onnx': buildAddSubModel({ size: 16 }),
  'scale/config.pbtxt': SCALE,
  'scale/1/model.ts': reexport('scale-model.ts'),
  'pipeline/config.pbtxt': PIPELINE,
  ...Object.fromEntries(Object.entries(INVALID).map(([name, [steps, , io]]) => [`${name}/config.pbtxt`, `${io ?? IO}\nensemble_scheduling { step [ ${steps} ] }`])),
});

const inputs = (a: number[], b: number[]) => [int32('A', [1, 16], a), int32('B', [1, 16], b)];
const outputsOf = (response: InferResponse) => Object.fromEntries(response.outputs.map((t) => [t.name, values(t)]));

describe('ensembles of repository models', () => {
  let server: ServeFnServer;
  let repository: FolderModelRepository;

  beforeAll(async () => {
    server = new ServeFnServer({ models: [], repository: { root, controlMode: 'explicit', startupModels: ['pipeline', 'scale', 'simple'] }, collectProcessMetrics: false });
    await server.start();
    repository = server.repository!;
  });

  afterAll(async () => {
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('passes tensors from step to step and returns exact values', async () => {
    const a = range(16);
    const b = range(16, (i) => 100 - i);
    const response = await repository.get('pipeline').infer({ id: 'e1', inputs: inputs(a, b) });
    expect(response).toMatchObject({ modelName: 'pipeline', modelVersion: '1', id: 'e1' });
    expect(outputsOf(response)).toEqual({
      SCALED_A: a.map((v) => 3 * v),
      SCALED_SUM: range(16, () => 300),
      DIFF: range(16, (i) => 2 * i - 100),
    });
    expect(repository.get('pipeline').info).toMatchObject({ platform: 'ensemble', maxBatchSize: 8 });
  });

  it('keeps concurrent requests apart while their steps are batched', async () => {
    const responses = await Promise.all(range(4).map((k) => repository.get('pipeline').infer({ inputs: inputs(range(16, (i) => i + k), range(16, () => k)), outputs: [{ name: 'SCALED_SUM' }] })));
    expect(responses.map(outputsOf)).toEqual(range(4).map((k) => ({ SCALED_SUM: range(16, (i) => 3 * (i + 2 * k)) })));
  });

  it('fails the request with the error of a failing step', async () => {
    await expect(repository.get('pipeline').infer({ inputs: inputs(range(16), range(16)), parameters: { fail: 'status' } })).rejects.toThrow(
      expect.objectContaining({ code: 'SF_ERR_BAD_REQUEST', message: 'values must be positive' }),
    );
  });

  it('is not ready while a step model is unloaded, and follows it when it is loaded again', async () => {
    await repository.unload('scale');
    expect(repository.get('pipeline').ready()).toBe(false);
    await expect(repository.get('pipeline').infer({ inputs: inputs(range(16), range(16)) })).rejects.toThrow("Request for unknown model: 'scale' is not found");
    await repository.load('scale', { config: JSON.stringify({ name: 'scale', backend: 'serve-fn', max_batch_size: 8, parameters: { scale: { string_value: '5' } }, input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [16] }], output: [{ name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [16] }, { name: 'OUTPUT1', data_type: 'TYPE_INT32', dims: [1] }] }) });
    expect(repository.get('pipeline').ready()).toBe(true);
    const response = await repository.get('pipeline').infer({ inputs: inputs(range(16, () => 1), range(16, () => 1)), outputs: [{ name: 'SCALED_SUM' }] });
    expect(outputsOf(response)).toEqual({ SCALED_SUM: range(16, () => 10) });
  });

  it.each(Object.entries(INVALID))('refuses ensemble %s at load', async (name, [, reason]) => {
    await expect(repository.load(name)).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_ENSEMBLE_INVALID', message: `Ensemble '${name}' is invalid: ${reason}` }));
  });
});
