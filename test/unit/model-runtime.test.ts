import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { Endpoint, Instances, Model } from '../../src/decorators/index.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { InlineInstance } from '../../src/runtime/inline-instance.js';
import { ModelRuntime } from '../../src/runtime/model-runtime.js';
import { StreamChannel } from '../../src/runtime/stream-channel.js';

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

function runtime(): ModelRuntime {
  const definition = buildDefinition(Counter);
  return new ModelRuntime(definition, {
    factory: (index) =>
      new InlineInstance(
        index,
        definition,
        { modelName: 'counter', modelVersion: '1', instanceName: 'counter_0', instanceIndex: index, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: process.cwd(), config: {} },
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
});
