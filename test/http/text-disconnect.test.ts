import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { InferenceModel } from '../../src/inference/inference-model.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { openAiRoutes } from '../../src/protocol/openai/openai-routes.js';
import { DEFAULT_JSON_BODY_LIMIT, installJsonBodyParser } from '../../src/server/json-body-parser.js';
import { DEFAULT_TEXT_LIMITS, TextEngine } from '../../src/text/text-engine.js';
import type { TextForward } from '../../src/text/forward-scheduler.js';
import { TextMetrics } from '../../src/text/text-metrics.js';
import { createError } from '../../src/errors/index.js';
import type { CancelSignal } from '../../src/spec/cancel-signal.js';
import { TextTokenizer, type EncodeOptions, type TextEncoding, type TextTokenization } from '../../src/tokenizer/tokenizer.js';
import { fakeForward, forwardOver, WORDPIECE_TOKENIZER, type ForwardLog } from '../helpers/text-model-fixture.js';

/** A forward model that holds every batch until released. */
function heldForward(inner: InferenceModel): { model: InferenceModel; release: () => void; started: () => number } {
  const waiting: (() => void)[] = [];
  let started = 0;
  return {
    model: { info: inner.info, ready: () => true, infer: async (request) => { started++; await new Promise<void>((r) => waiting.push(r)); return inner.infer(request); } },
    release: () => waiting.splice(0).forEach((r) => r()),
    started: () => started,
  };
}

/** A text embedder over `forward` behind the OpenAI routes, listening on a loopback port. */
async function servedEmbedder(tokenizer: TextTokenization, forward: TextForward, registry: Registry): Promise<{ app: FastifyInstance; port: number }> {
  const spec = { name: 'tiny-embed', modelId: 'test', task: 'embed' as const, pooling: 'mean' as const, maxInputLength: 32, prompts: {}, labels: [] };
  const model = new TextEngine(spec, tokenizer, forward, { limits: DEFAULT_TEXT_LIMITS, computeType: 'cpu', metrics: new TextMetrics(registry) });
  const app = Fastify();
  installJsonBodyParser(app, DEFAULT_JSON_BODY_LIMIT);
  await app.register(openAiRoutes, { models: { all: () => [model], pick: () => model } as never });
  await app.listen({ port: 0, host: '127.0.0.1' });
  closers.push(() => app.close());
  return { app, port: (app.server.address() as AddressInfo).port };
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('a text client that disconnects while its texts are queued', () => {
  it("has its queued sequences removed, counted as te_request_failure{err=\"dropped\"}, and no forward pass runs them", async () => {
    const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
    const log: ForwardLog = { batches: [] };
    const held = heldForward(fakeForward('embed', tokenizer.vocabSize, log));
    const registry = new Registry();
    const recorder = new InferenceRecorder({ registry, collectProcessMetrics: false });
    const forward = forwardOver(held.model, 1, recorder);
    const { app, port } = await servedEmbedder(tokenizer, forward, registry);

    const metric = async (name: string, labels: Record<string, string>): Promise<number> => {
      const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
      const value = (found?.values as { labels: Record<string, string | number>; value: number }[] | undefined)?.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x));
      return value?.value ?? 0;
    };
    const executions = () => metric('nv_inference_exec_count', { model: 'fake-embed' });

    // One batch runs on the instance; the next requests wait in the forward queue.
    const running = app.inject({ method: 'POST', url: '/v1/embeddings', payload: { input: 'first' } });
    await expect.poll(() => forward.engine.pendingCount).toBe(1);
    const behind = app.inject({ method: 'POST', url: '/v1/embeddings', payload: { input: 'second' } });
    await expect.poll(() => forward.engine.pendingCount).toBe(2);

    const leaving = httpRequest({ port, host: '127.0.0.1', method: 'POST', path: '/v1/embeddings', headers: { 'content-type': 'application/json' } });
    leaving.on('error', () => undefined);
    leaving.end(JSON.stringify({ input: ['left behind one', 'left behind two'] }));
    await expect.poll(() => forward.engine.pendingCount).toBe(4);
    leaving.destroy();

    await expect.poll(() => metric('te_request_failure', { model: 'tiny-embed', err: 'dropped' })).toBe(1);
    expect(forward.engine.pendingCount).toBe(2);
    held.release();
    await expect.poll(held.started).toBe(2);
    held.release();
    expect((await running).statusCode).toBe(200);
    expect((await behind).statusCode).toBe(200);
    // Two forward passes ran, neither with the texts of the client that left.
    expect(await executions()).toBe(2);
    expect(log.batches.map((b) => b.rows)).toEqual([1, 1]);
    expect(await metric('nv_inference_request_failure', { model: 'fake-embed', reason: 'CANCELED' })).toBe(2);
  });

  it('while its texts wait for the tokenizer: the tokenizer is handed its signal, and the request counts as dropped once', async () => {
    const tokenizer = await TextTokenizer.fromFile(WORDPIECE_TOKENIZER);
    // A tokenizer whose queue is full: each text waits until its signal aborts, as one queued for a busy instance does.
    const signals: CancelSignal[] = [];
    const queuedTokenizer: TextTokenization = Object.assign(Object.create(tokenizer) as TextTokenizer, {
      encode: (_text: string, _options?: EncodeOptions, signal?: CancelSignal) => new Promise<TextEncoding>((_resolve, reject) => {
        if (!signal) return reject(new Error('encoded with no signal'));
        signals.push(signal);
        signal.addEventListener('abort', () => reject(createError('SF_ERR_CANCELLED')), { once: true });
      }),
    });
    const log: ForwardLog = { batches: [] };
    const registry = new Registry();
    const recorder = new InferenceRecorder({ registry, collectProcessMetrics: false });
    const forward = forwardOver(fakeForward('embed', tokenizer.vocabSize, log), 1, recorder);
    const { port } = await servedEmbedder(queuedTokenizer, forward, registry);

    const leaving = httpRequest({ port, host: '127.0.0.1', method: 'POST', path: '/v1/embeddings', headers: { 'content-type': 'application/json' } });
    leaving.on('error', () => undefined);
    leaving.end(JSON.stringify({ input: ['left behind one', 'left behind two'] }));
    await expect.poll(() => signals.length).toBe(2);
    leaving.destroy();

    const failures = async (): Promise<Record<string, number>> => {
      const found = (await registry.getMetricsAsJSON()).find((m) => m.name === 'te_request_failure');
      return Object.fromEntries((found?.values ?? []).filter((v) => v.value > 0).map((v) => [String(v.labels.err), v.value]));
    };
    await expect.poll(failures).toEqual({ dropped: 1 });
    expect(log.batches).toEqual([]);
  });
});
