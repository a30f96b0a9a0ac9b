import 'reflect-metadata';
import { IsString } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, Model } from '../../src/decorators/index.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import { decoratedModelConfig } from '../../src/inference/decorated-model.js';

class TextRequest {
  @IsString() text!: string;
}

@Model({ name: 'plain', version: 'beta' })
class PlainModel {
  @Endpoint('/plain')
  async run(request: TextRequest): Promise<TextRequest> {
    return request;
  }
}

@Model({ name: 'gpu' })
@Instances(3, { kind: 'gpu', devices: [0, 1] })
class GpuModel {
  @Endpoint('/small', { body: TextRequest })
  @Batch(4, 100)
  async small(batch: TextRequest[]): Promise<TextRequest[]> {
    return batch;
  }

  @Endpoint('/large', { body: TextRequest })
  @Batch({ maxBatchSize: 32, maxQueueDelayUs: 500, preferredBatchSizes: [8, 16], priorityLevels: 2, priorityQueuePolicy: { 1: { maxQueueSize: 4, timeoutAction: 'DELAY' } } })
  async large(batch: TextRequest[]): Promise<TextRequest[]> {
    return batch;
  }
}

@Model({ name: 'npu' })
@Instances(1, { kind: 'npu', devices: [2] })
class NpuModel {
  @Endpoint('/npu')
  async run(request: TextRequest): Promise<TextRequest> {
    return request;
  }
}

describe('decoratedModelConfig', () => {
  it('gives a model without @Batch max_batch_size 0, no dynamic_batching, one CPU instance and no version number it cannot parse', () => {
    expect(decoratedModelConfig(buildDefinition(PlainModel))).toEqual({
      name: 'plain',
      platform: 'serve-fn',
      backend: 'serve-fn',
      version_policy: { specific: { versions: [] } },
      max_batch_size: 0,
      input: [],
      output: [],
      instance_group: [{ name: 'plain', count: 1, kind: 'KIND_CPU', gpus: [] }],
      parameters: { endpoints: { string_value: 'POST /plain' } },
    });
  });

  it('takes max_batch_size and dynamic_batching from the endpoint with the largest @Batch, and GPU devices as gpus', () => {
    const config = decoratedModelConfig(buildDefinition(GpuModel));
    expect(config.max_batch_size).toBe(32);
    expect(config.instance_group).toEqual([{ name: 'gpu', count: 3, kind: 'KIND_GPU', gpus: [0, 1] }]);
    expect(config.dynamic_batching).toEqual({
      preferred_batch_size: [8, 16],
      max_queue_delay_microseconds: 500,
      preserve_ordering: false,
      priority_levels: 2,
      default_priority_level: 2,
      default_queue_policy: { timeout_action: 'REJECT', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 0 },
      priority_queue_policy: { 1: { timeout_action: 'DELAY', default_timeout_microseconds: 0, allow_timeout_override: false, max_queue_size: 4 } },
    });
  });

  it('places NPU instances with KIND_MODEL, since Triton has no NPU kind', () => {
    expect(decoratedModelConfig(buildDefinition(NpuModel)).instance_group).toEqual([{ name: 'npu', count: 1, kind: 'KIND_MODEL', gpus: [] }]);
  });
});
