import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, Model, Tensors } from '../../src/decorators/index.js';
import type { ExecuteRequest, ExecuteResponse } from '../../src/instance/tensor-model-api.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { InlineInstance } from '../../src/engine/inline-instance.js';
import { ModelRuntime } from '../../src/inference/model-runtime.js';
import { StreamChannel } from '../../src/wire/stream-channel.js';

@Model({ name: 'counter' })
@Instances(1, { inline: true })
class Counter {
  @Endpoint('/count', { stream: 'ndjson' })
  async *count(): AsyncGenerator<number> {
    yield 1;
    yield 2;
  }

  @Endpoint('/total')
  async total(): Promise<number> {
    return 3;
  }
}

/** @Batch allows 8 requests, but the interface's max_batch_size, which counts rows, is 2. */
@Model({ name: 'rows' })
@Instances(1, { inline: true })
@Tensors({ inputs: [{ name: 'INPUT0', datatype: 'FP32', dims: [1] }], outputs: [{ name: 'OUTPUT0', datatype: 'FP32', dims: [1] }], maxBatchSize: 2 })
class Rows {
  @Batch({ maxBatchSize: 8, maxQueueDelayUs: 0 })
  async execute(requests: ExecuteRequest[]): Promise<ExecuteResponse[]> {
    return requests.map((request) => ({ outputs: [createTensor('OUTPUT0', 'FP32', request.input('INPUT0')!.shape, request.input('INPUT0')!.data)], parameters: { batch: requests.length } }));
  }
}

function runtime(model: new () => object = Counter): ModelRuntime {
  const definition = buildDefinition(model);
  return new ModelRuntime(definition, {
    factory: (index) =>
      new InlineInstance(
        index,
        definition,
        { modelName: definition.name, modelVersion: '1', instanceName: `${definition.name}_0`, instanceIndex: index, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: process.cwd(), config: {} },
        () => Promise.reject(new Error('unused')),
      ),
    recorder: new InferenceRecorder({ collectProcessMetrics: false }),
    log: () => undefined,
  });
}

const wire = { payload: undefined, info: { requestId: 'r1', params: {}, query: {}, headers: {} } };

describe('ModelRuntime', () => {
  it('answers a streaming endpoint with its channel from openStream, and a plain one with its value from submit', async () => {
    const rt = runtime();
    await rt.engine.start();
    const channel = await rt.openStream('count', wire);
    expect(channel).toBeInstanceOf(StreamChannel);
    const chunks: unknown[] = [];
    for await (const chunk of channel) chunks.push(chunk);
    expect(chunks).toEqual([1, 2]);
    await expect(rt.submit('total', wire)).resolves.toBe(3);
    await rt.engine.drain();
    await rt.engine.stop();
  });

  it("batches @Tensors requests up to the interface's max_batch_size rows, whatever @Batch's size", async () => {
    const rt = runtime(Rows);
    await rt.engine.start();
    const request = (id: string) => ({ wire: { id, inputs: [createTensor('INPUT0', 'FP32', [1, 1], [1])], outputs: ['OUTPUT0'], parameters: {} }, rows: 1, signature: 'INPUT0:1' });
    // The first runs alone on the idle instance; the other three queue behind it.
    const results = await Promise.all(['r0', 'r1', 'r2', 'r3'].map((id) => rt.submitTensors(request(id))));
    expect(results.map((r) => r.parameters?.batch)).toEqual([1, 2, 2, 1]);
    await rt.engine.drain();
    await rt.engine.stop();
  });
});
