import { describe, expect, it } from 'vitest';
import type { InferenceModelInfo } from '../../src/inference/inference-model.js';
import { TensorModelVersion, type WarmupRun } from '../../src/inference/tensor-model-version.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { schedulerFor } from '../../src/model-repository/configured-scheduler.js';
import { parseModelConfig } from '../../src/model-repository/model-config.js';
import { InstanceEngine } from '../../src/engine/instance-engine.js';
import type { ModelInstance } from '../../src/engine/model-instance.js';
import type { ExecuteOutcome } from '../../src/wire/wire-format.js';
import { int32, values } from '../fixtures/repository/repository-files.js';
import { noStreams } from '../helpers/no-streams.js';
import { tensorRequests } from '../helpers/manual-tensor-instances.js';

const info: InferenceModelInfo = {
  name: 'm', version: '2', platform: 'onnxruntime_onnx', maxBatchSize: 4, config: {}, decoupled: false,
  inputs: [{ name: 'IN', datatype: 'INT32', shape: [2] }],
  outputs: [{ name: 'OUT', datatype: 'INT32', shape: [2] }, { name: 'OTHER', datatype: 'INT32', shape: [2] }],
};

/** Instances that answer each request with its input as OUT and OTHER, logging what ran where. */
function echoInstances(log: string[], failWarmup = false) {
  return (index: number): ModelInstance => ({
    ...noStreams,
    index,
    start: async () => void log.push(`start ${index}`),
    stop: async () => void log.push(`stop ${index}`),
    execute: async (call): Promise<ExecuteOutcome> => {
      const requests = [...tensorRequests(call)];
      log.push(`execute ${index} ×${requests.length}${requests[0].id ? ` ${requests[0].id}` : ''}`);
      const results = requests.map((r) => (failWarmup && !r.id
        ? { ok: false as const, error: { __serveFnError: true as const, name: 'Error', message: 'bad warmup data' } }
        : { ok: true as const, value: { outputs: r.outputs.map((name) => ({ ...r.inputs[0], name })) } }));
      return { results, computeStartMs: 0, computeEndMs: 0 };
    },
  });
}

function version(log: string[], warmups: WarmupRun[], failWarmup = false): TensorModelVersion {
  const engine = new InstanceEngine({
    name: 'm', version: '2', instanceCount: 2, factory: echoInstances(log, failWarmup), recorder: new InferenceRecorder({ collectProcessMetrics: false }), log: () => undefined,
  });
  const scheduler = schedulerFor(parseModelConfig('name: "m"\nmax_batch_size: 4\ndynamic_batching {}\n', 'config.pbtxt').config, '2', engine, () => undefined);
  if (scheduler.decoupled) throw new Error('expected a model answering once');
  return new TensorModelVersion(info, engine, scheduler.requests, warmups);
}

const warmup = (count: number, batch: number): WarmupRun => ({
  name: 'zeros', count, requests: () => Array.from({ length: batch }, () => ({ inputs: [int32('IN', [1, 2], [0, 0])], outputs: ['OUT'], parameters: {} })),
});

describe('TensorModelVersion', () => {
  it('runs every warmup count times on every instance before it is ready', async () => {
    const log: string[] = [];
    const model = version(log, [warmup(2, 3)]);
    const loading = model.load();
    expect(model.ready()).toBe(false);
    await loading;
    expect(model.ready()).toBe(true);
    expect(log.sort()).toEqual(['execute 0 ×3', 'execute 0 ×3', 'execute 1 ×3', 'execute 1 ×3', 'start 0', 'start 1']);
  });

  it('refuses requests until loaded and answers with the requested outputs after', async () => {
    const model = version([], []);
    const request = { id: 'r', inputs: [int32('IN', [1, 2], [4, 5])], outputs: [{ name: 'OTHER' }] };
    await expect(model.infer(request)).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_NOT_READY', message: "Model 'm' version 2 is not ready" }));
    await model.load();
    const response = await model.infer(request);
    expect(response).toMatchObject({ modelName: 'm', modelVersion: '2', id: 'r' });
    expect(response.outputs.map((t) => [t.name, values(t)])).toEqual([['OTHER', [4, 5]]]);
    await expect(model.infer({ inputs: [] })).rejects.toThrow("Expected input 'IN' for model 'm' is missing.");
  });

  it('fails to load when a warmup fails, and stops its instances', async () => {
    const log: string[] = [];
    const model = version(log, [warmup(1, 1)], true);
    await expect(model.load()).rejects.toThrow(expect.objectContaining({
      code: 'SF_ERR_EXECUTION_FAILED',
      message: "Model 'm' failed in warmup 'zeros': bad warmup data",
    }));
    expect(model.ready()).toBe(false);
    expect(log.filter((l) => l.startsWith('stop')).sort()).toEqual(['stop 0', 'stop 1']);
  });

  it('stops being ready as unload starts and stops its instances', async () => {
    const log: string[] = [];
    const model = version(log, []);
    await model.load();
    const unloading = model.unload();
    expect(model.ready()).toBe(false);
    await unloading;
    expect(log.filter((l) => l.startsWith('stop')).sort()).toEqual(['stop 0', 'stop 1']);
  });
});
