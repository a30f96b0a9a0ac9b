import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DecoupledModelVersion } from '../../src/inference/decoupled-model-version.js';
import { canStream, type StreamedInferResponse } from '../../src/inference/decoupled-model.js';
import type { InferRequest } from '../../src/inference/inference-model.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { buildModelVersions } from '../../src/model-repository/model-version-builder.js';
import { readModelSource } from '../../src/model-repository/model-source.js';
import { fileText } from '../fixtures/decoupled/countdown-marker.js';
import { inThreadInstances, int32, scratchFolder, values, writeFiles } from '../fixtures/repository/repository-files.js';
import { settle } from '../helpers/settle.js';

const ROOT = fileURLToPath(new URL('../fixtures/decoupled', import.meta.url));
const COUNTDOWN_CONFIG = readFileSync(join(ROOT, 'countdown/config.pbtxt'), 'utf8');

const loaded: DecoupledModelVersion[] = [];
afterEach(async () => {
  await Promise.all(loaded.splice(0).map((m) => m.unload()));
});

async function countdown(config = COUNTDOWN_CONFIG): Promise<{ model: DecoupledModelVersion; recorder: InferenceRecorder }> {
  const root = scratchFolder('decoupled');
  writeFiles(root, { 'countdown/config.pbtxt': config, 'countdown/1/model.ts': readFileSync(join(ROOT, 'countdown/1/model.ts'), 'utf8') });
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const [model] = await buildModelVersions(readModelSource(root, 'countdown', join(root, 'countdown')), {
    recorder,
    log: () => undefined,
    infer: () => Promise.reject(new Error('unused')),
    resolve: () => {
      throw new Error('unused');
    },
    instanceFactory: inThreadInstances,
  });
  if (!(model instanceof DecoupledModelVersion)) throw new Error('countdown was not built as a decoupled model');
  await model.load();
  loaded.push(model);
  return { model, recorder };
}

const request = (n: number, more: { FAIL_AT?: number; FINAL_AT?: number } = {}, rest: Partial<InferRequest> = {}): InferRequest => ({
  id: `n${n}`,
  inputs: [int32('N', [1], [n]), ...Object.entries(more).map(([name, v]) => int32(name, [1], [v]))],
  ...rest,
});

const summary = (r: StreamedInferResponse): [number[], string, boolean] => [values(r.outputs[0]), new TextDecoder().decode((r.outputs[1].data as Uint8Array[])[0]), r.final];

async function collect(stream: AsyncIterable<StreamedInferResponse>): Promise<StreamedInferResponse[]> {
  const out: StreamedInferResponse[] = [];
  for await (const r of stream) out.push(r);
  return out;
}

describe('DecoupledModelVersion', () => {
  it('is built for model_transaction_policy { decoupled: true } and streams every response in order', async () => {
    const { model, recorder } = await countdown();
    expect(model.info.decoupled).toBe(true);
    expect(canStream(model)).toBe(true);
    const responses = await collect(await model.inferStream(request(3)));
    expect(responses.map(summary)).toEqual([[[3], 'tick 3', false], [[2], 'tick 2', false], [[1], 'tick 1', false]]);
    expect(responses.map((r) => [r.modelName, r.modelVersion, r.id])).toEqual(Array(3).fill(['countdown', '1', 'n3']));
    await settle();
    const [stats] = recorder.statistics('countdown', '1').model_stats;
    expect([stats.inference_stats.success.count, stats.execution_count]).toEqual([1, 1]);
  });

  it('sends no response for N = 0', async () => {
    const { model } = await countdown();
    expect(await collect(await model.inferStream(request(0)))).toEqual([]);
  });

  it('stops pulling after a response marked final, and the model\'s finally runs', async () => {
    const { model } = await countdown();
    const marker = join(scratchFolder('marker'), 'stopped');
    const responses = await collect(await model.inferStream(request(5, { FINAL_AT: 4 }, { parameters: { marker } })));
    expect(responses.map(summary)).toEqual([[[5], 'tick 5', false], [[4], 'tick 4', true]]);
    expect(await fileText(marker)).toBe('stopped after 2 of 5');
  });

  it('ends the stream with the model\'s error after the responses before it', async () => {
    const { model } = await countdown();
    const seen: number[][] = [];
    const run = async (): Promise<void> => {
      for await (const r of await model.inferStream(request(4, { FAIL_AT: 2 }))) seen.push(values(r.outputs[0]));
    };
    await expect(run()).rejects.toMatchObject({ code: 'SF_ERR_EXECUTION_FAILED', statusCode: 500, message: "Model 'countdown' failed in execute: countdown failed at 2" });
    expect(seen).toEqual([[4], [3]]);
  });

  it('rejects at once when the first response is already an error', async () => {
    const { model } = await countdown();
    await expect(model.inferStream(request(2, { FAIL_AT: 2 }))).rejects.toMatchObject({ message: "Model 'countdown' failed in execute: countdown failed at 2" });
  });

  it('checks each response against the configured outputs', async () => {
    const { model } = await countdown();
    const seen: number[][] = [];
    const run = async (): Promise<void> => {
      for await (const r of await model.inferStream(request(3, {}, { parameters: { ghost_at: 2 } }))) seen.push(values(r.outputs[0]));
    };
    await expect(run()).rejects.toMatchObject({ message: "Model 'countdown' failed in execute: returned output 'GHOST', which config.pbtxt does not declare" });
    expect(seen).toEqual([[3]]);
  });

  it('refuses a request that does not fit the inputs before it runs', async () => {
    const { model } = await countdown();
    await expect(model.inferStream({ inputs: [] })).rejects.toMatchObject({ code: 'SF_ERR_TENSOR_MISSING', message: "Expected input 'N' for model 'countdown' is missing." });
  });

  it('infer() takes exactly one response', async () => {
    const { model } = await countdown();
    const one = await model.infer(request(1));
    expect([one.id, values(one.outputs[0]), 'final' in one]).toEqual(['n1', [1], false]);
    await expect(model.infer(request(2))).rejects.toMatchObject({
      code: 'SF_ERR_BAD_REQUEST',
      message: "Model 'countdown' is decoupled and sent 2 responses to this request; this call takes exactly one. Use generate_stream or gRPC ModelStreamInfer to receive every response.",
    });
    await expect(model.infer(request(0))).rejects.toMatchObject({ message: expect.stringContaining('sent 0 responses') });
  });

  it('cancelling a stream runs the model\'s finally and frees the instance for the next request', async () => {
    const { model } = await countdown();
    const marker = join(scratchFolder('marker'), 'stopped');
    const first = await model.inferStream(request(1000, {}, { parameters: { marker, pause_ms: 1 } }));
    const iterator = first[Symbol.asyncIterator]();
    expect(values((await iterator.next()).value!.outputs[0])).toEqual([1000]);
    // One instance: the second request waits until the first stream lets its instance go.
    let secondStarted = false;
    const second = model.inferStream(request(1)).then((s) => {
      secondStarted = true;
      return s;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(secondStarted).toBe(false);
    first.cancel();
    expect((await collect(await second)).map(summary)).toEqual([[[1], 'tick 1', false]]);
    expect(await fileText(marker)).toMatch(/^stopped after \d+ of 1000$/);
  });

  it('a request waiting for an instance gives up when cancelled or timed out', async () => {
    // Its own timeout counts where the queue policy allows overrides, as in Triton.
    const { model } = await countdown(COUNTDOWN_CONFIG + 'dynamic_batching { default_queue_policy { allow_timeout_override: true } }\n');
    const busy = await model.inferStream(request(1000, {}, { parameters: { pause_ms: 1 } }));
    const abort = new AbortController();
    const cancelled = model.inferStream(request(1, {}, { signal: abort.signal }));
    abort.abort();
    await expect(cancelled).rejects.toMatchObject({ code: 'SF_ERR_CANCELLED' });
    await expect(model.inferStream(request(1, {}, { timeoutUs: 30_000 }))).rejects.toMatchObject({ code: 'SF_ERR_TIMEOUT' });
    busy.cancel();
  });

  it('a waiting request follows the queue policy: it times out after default_timeout_microseconds, and is refused over max_queue_size', async () => {
    const { model, recorder } = await countdown(COUNTDOWN_CONFIG + 'dynamic_batching { default_queue_policy { default_timeout_microseconds: 30000 max_queue_size: 1 } }\n');
    const busy = await model.inferStream(request(1000, {}, { parameters: { pause_ms: 1 } }));
    const waiting = model.inferStream(request(1));
    await expect(model.inferStream(request(2))).rejects.toMatchObject({ code: 'SF_ERR_QUEUE_FULL', statusCode: 503 });
    await expect(waiting).rejects.toMatchObject({ code: 'SF_ERR_TIMEOUT' });
    busy.cancel();
    const failures = await recorder.registry.getSingleMetric('nv_inference_request_failure')!.get();
    expect(failures.values.find((v) => v.labels.reason === 'REJECTED')?.value).toBe(2);
  });

  it('aborting the request signal after the first response stops the stream', async () => {
    const { model } = await countdown();
    const marker = join(scratchFolder('marker'), 'stopped');
    const abort = new AbortController();
    const stream = await model.inferStream(request(1000, {}, { signal: abort.signal, parameters: { marker, pause_ms: 1 } }));
    abort.abort();
    expect((await collect(stream)).length).toBeLessThan(1000);
    expect(await fileText(marker)).toMatch(/^stopped after \d+ of 1000$/);
  });

  it('a request whose signal aborted before its first response still stops the model', async () => {
    const { model } = await countdown();
    const marker = join(scratchFolder('marker'), 'stopped');
    const abort = new AbortController();
    // The instance is idle, so the request is on it before the abort, and the stream opens.
    const opening = model.inferStream(request(1000, {}, { signal: abort.signal, parameters: { marker, pause_ms: 1 } }));
    abort.abort();
    const stream = await opening;
    expect((await collect(stream)).length).toBeLessThan(1000);
    expect(await fileText(marker)).toMatch(/^stopped after \d+ of 1000$/);
  });

  it('unload cancels a stream still open after streamTimeoutMs, and the model\'s finally runs', async () => {
    const { model } = await countdown();
    const marker = join(scratchFolder('marker'), 'stopped');
    await model.inferStream(request(1000, {}, { parameters: { marker, pause_ms: 1 } }));
    const started = Date.now();
    await model.unload({ streamTimeoutMs: 100 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(await fileText(marker)).toMatch(/^stopped after \d+ of 1000$/);
    loaded.splice(0);
  });

  it('unload waits until the model has stopped producing, and refuses new requests meanwhile', async () => {
    const { model } = await countdown();
    const stream = await model.inferStream(request(1000, {}, { parameters: { pause_ms: 1 } }));
    let unloaded = false;
    const unloading = model.unload().then(() => (unloaded = true));
    expect(model.ready()).toBe(false);
    await expect(model.inferStream(request(1))).rejects.toMatchObject({ code: 'SF_ERR_MODEL_NOT_READY' });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(unloaded).toBe(false);
    stream.cancel();
    await unloading;
    expect(unloaded).toBe(true);
    loaded.splice(0);
  });

  it('warms up through the model\'s execute(request), then serves', async () => {
    const warmup = 'model_warmup [ { name: "zero" batch_size: 1 inputs { key: "N" value { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } } } ]\n';
    const { model } = await countdown(COUNTDOWN_CONFIG + warmup);
    expect(model.ready()).toBe(true);
    expect((await collect(await model.inferStream(request(1)))).map(summary)).toEqual([[[1], 'tick 1', false]]);
  });

  it('only model.py, model.ts and model.js models without sequence_batching can be decoupled', () => {
    const root = scratchFolder('decoupled-onnx');
    writeFiles(root, { 'm/config.pbtxt': 'platform: "onnxruntime_onnx"\nmodel_transaction_policy { decoupled: true }\n', 'm/1/model.onnx': '' });
    expect(() => readModelSource(root, 'm', join(root, 'm'))).toThrow(
      "Model configuration for 'm' is invalid: only a model.py, model.ts or model.js model without sequence_batching can be decoupled (model_transaction_policy { decoupled: true })",
    );
  });
});
