import { describe, expect, it } from 'vitest';
import { createError } from '../../src/errors/index.js';
import { EnsembleModel } from '../../src/inference/ensemble-model.js';
import type { InferenceModel, InferenceModelInfo, InferRequest, InferResponse } from '../../src/inference/inference-model.js';
import type { EnsembleStepPlan } from '../../src/inference/ensemble-model.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor, TensorSpec } from '../../src/spec/tensor.js';
import { int32, values } from '../fixtures/repository/repository-files.js';
import { settle } from '../helpers/settle.js';

const vec = (name: string): TensorSpec => ({ name, datatype: 'INT32', shape: [2] });
const info = (name: string, inputs: string[], outputs: string[]): InferenceModelInfo => ({
  name, version: '1', platform: 'test', inputs: inputs.map(vec), outputs: outputs.map(vec), maxBatchSize: 4, config: {}, decoupled: false,
});

/** A step model computing each output from its inputs; it records what it received and can be held. */
class StepModel implements InferenceModel {
  readonly received: InferRequest[] = [];
  isReady = true;
  hold: Promise<void> = Promise.resolve();
  failWith: Error | undefined;

  constructor(readonly info: InferenceModelInfo, private readonly compute: (inputs: Map<string, number[]>) => Record<string, number[]>) {}

  ready(): boolean {
    return this.isReady;
  }

  async infer(request: InferRequest): Promise<InferResponse> {
    this.received.push(request);
    await this.hold;
    if (this.failWith) throw this.failWith;
    const inputs = new Map(request.inputs.map((t) => [t.name, values(t)]));
    const produced = this.compute(inputs);
    const rows = request.inputs[0].shape[0];
    const outputs = (request.outputs ?? []).map(({ name }) => int32(name, [rows, 2], produced[name]));
    return { modelName: this.info.name, modelVersion: '1', outputs };
  }
}

function setup() {
  const add = new StepModel(info('add', ['L', 'R'], ['S']), (i) => ({ S: i.get('L')!.map((v, k) => v + i.get('R')![k]) }));
  const neg = new StepModel(info('neg', ['X'], ['Y']), (i) => ({ Y: i.get('X')!.map((v) => -v) }));
  const models: Record<string, StepModel> = { add, neg };
  const steps: EnsembleStepPlan[] = [
    { index: 0, modelName: 'add', inputs: [['L', 'A'], ['R', 'B']], outputs: [['S', 'SUM']] },
    { index: 1, modelName: 'neg', inputs: [['X', 'SUM']], outputs: [['Y', 'NEG_SUM']] },
    { index: 2, modelName: 'neg', inputs: [['X', 'A']], outputs: [['Y', 'NEG_A']] },
  ];
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const resolve = (name: string) => {
    const model = models[name];
    if (!model) throw createError('SF_ERR_MODEL_UNKNOWN', name);
    return model;
  };
  const ensemble = new EnsembleModel(info('pipe', ['A', 'B'], ['SUM', 'NEG_SUM', 'NEG_A']), steps, resolve, recorder);
  return { add, neg, models, ensemble, recorder };
}

const request = (a: number[], b: number[]): InferRequest => ({ id: 'q', inputs: [int32('A', [1, 2], a), int32('B', [1, 2], b)] });
const byName = (outputs: readonly Tensor[]) => Object.fromEntries(outputs.map((t) => [t.name, values(t)]));

describe('EnsembleModel', () => {
  it('feeds each step as soon as its tensors exist and returns the ensemble outputs', async () => {
    const { add, neg, ensemble, recorder } = setup();
    await ensemble.load();
    let release!: () => void;
    add.hold = new Promise((resolve) => (release = resolve));
    const answer = ensemble.infer(request([1, 2], [10, 20]));
    await settle();
    // neg(A) needs nothing from add, so it runs while add is held; neg(SUM) waits.
    expect(neg.received.map((r) => r.inputs.map((t) => [t.name, values(t)]))).toEqual([[['X', [1, 2]]]]);
    release();
    const response = await answer;
    expect(response).toMatchObject({ modelName: 'pipe', modelVersion: '1', id: 'q' });
    expect(byName(response.outputs)).toEqual({ SUM: [11, 22], NEG_SUM: [-11, -22], NEG_A: [-1, -2] });
    expect(add.received[0].outputs).toEqual([{ name: 'S' }]);
    expect(recorder.statistics('pipe', '1').model_stats[0].inference_stats.success.count).toBe(1);
  });

  it('returns only the requested outputs', async () => {
    const { ensemble } = setup();
    await ensemble.load();
    const response = await ensemble.infer({ ...request([1, 1], [1, 1]), outputs: [{ name: 'NEG_A' }] });
    expect(byName(response.outputs)).toEqual({ NEG_A: [-1, -1] });
  });

  it('hands a tensor read by several steps to each as a copy, and a tensor read once as it is', async () => {
    const { add, neg, ensemble } = setup();
    await ensemble.load();
    const a = int32('A', [1, 2], [5, 6]);
    const b = int32('B', [1, 2], [1, 1]);
    await ensemble.infer({ inputs: [a, b] });
    const toAdd = add.received[0].inputs.find((t) => t.name === 'L')!;
    const toNeg = neg.received.find((r) => values(r.inputs[0])[0] === 5)!.inputs[0];
    expect(toAdd.data).not.toBe(a.data);
    expect(toNeg.data).not.toBe(a.data);
    expect(add.received[0].inputs.find((t) => t.name === 'R')!.data).toBe(b.data);
  });

  it('fails the request with the error of a failing step and counts the failure', async () => {
    const { neg, ensemble, recorder } = setup();
    await ensemble.load();
    neg.failWith = createError('SF_ERR_BACKEND_RUN_FAILED', 'onnxruntime', 'neg', 'boom');
    await expect(ensemble.infer(request([1, 2], [3, 4]))).rejects.toThrow("Backend 'onnxruntime' failed to run 'neg': boom");
    expect(recorder.statistics('pipe', '1').model_stats[0].inference_stats.fail.count).toBe(1);
  });

  it('checks the request against the ensemble inputs', async () => {
    const { ensemble } = setup();
    await ensemble.load();
    await expect(ensemble.infer({ inputs: [int32('A', [1, 2], [1, 2])] })).rejects.toThrow("Expected input 'B' for model 'pipe' is missing.");
    await expect(ensemble.infer({ inputs: [int32('A', [1, 2], [1, 2]), createTensor('B', 'FP32', [1, 2], [1, 2])] })).rejects.toThrow(
      "Tensor 'B': expected datatype INT32, got FP32.",
    );
  });

  it('is ready only while loaded and every step model is ready', async () => {
    const { neg, models, ensemble } = setup();
    expect(ensemble.ready()).toBe(false);
    await ensemble.load();
    expect(ensemble.ready()).toBe(true);
    neg.isReady = false;
    expect(ensemble.ready()).toBe(false);
    neg.isReady = true;
    delete models.neg;
    expect(ensemble.ready()).toBe(false);
    await expect(ensemble.infer(request([1, 2], [3, 4]))).rejects.toThrow("Request for unknown model: 'neg' is not found");
  });

  it('finishes in-flight requests before unload resolves, and refuses new ones', async () => {
    const { add, ensemble } = setup();
    await ensemble.load();
    let release!: () => void;
    add.hold = new Promise((resolve) => (release = resolve));
    const answer = ensemble.infer(request([1, 2], [3, 4]));
    let unloaded = false;
    const unloading = ensemble.unload().then(() => (unloaded = true));
    await settle();
    expect(unloaded).toBe(false);
    await expect(ensemble.infer(request([1, 2], [3, 4]))).rejects.toThrow("Model 'pipe' version 1 is not ready");
    release();
    await answer;
    await unloading;
    expect(unloaded).toBe(true);
  });
});
