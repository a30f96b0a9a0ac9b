import { request as httpRequest, type IncomingMessage } from 'node:http';
import { BroadcastChannel } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/index.js';
import { WorkerInstance } from '../../src/engine/worker-instance.js';
import { InlineStreamModel, PROGRESS_CHANNEL, StreamModel, type Progress } from '../fixtures/streaming/stream-model.js';

const moduleUrl = new URL('../fixtures/streaming/stream-model.ts', import.meta.url).href;
const produced = new Map<string, number>();
const finished = new Map<string, number>();
const progress = new BroadcastChannel(PROGRESS_CHANNEL);
progress.onmessage = (event) => {
  const data = (event as MessageEvent).data as Progress;
  if ('produced' in data) produced.set(data.tag, Math.max(produced.get(data.tag) ?? 0, data.produced));
  else finished.set(data.tag, data.finally);
};

let server: ServeFnServer;
let base: string;

beforeAll(async () => {
  // exposeErrors as under `serve-fn dev`: the tests read the messages of failed requests.
  server = new ServeFnServer({ models: [StreamModel, InlineStreamModel], moduleUrl, logger: false, collectProcessMetrics: false, exposeErrors: true });
  await server.start();
  base = await server.app.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await server.close();
  progress.close();
});

function post(path: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(base + path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
}

/** Starts a request with node:http, whose socket the test can break itself, and resolves with the response. */
function open(path: string, body: Record<string, unknown>): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { method: 'POST', headers: { 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function firstChunk(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => res.once('data', (chunk: Buffer) => resolve(chunk.toString())));
}

async function waitFor<T>(read: () => T | undefined, what: string): Promise<T> {
  for (let tries = 0; tries < 500; tries++) {
    const value = read();
    if (value !== undefined) return value;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Waits until the producer of `tag` has produced the same count for 300 ms, and returns it. */
async function stalledAt(tag: string): Promise<number> {
  let last = -1;
  for (let tries = 0; tries < 100; tries++) {
    await sleep(300);
    const now = produced.get(tag) ?? 0;
    if (now === last && now > 0) return now;
    last = now;
  }
  throw new Error(`producer ${tag} never stalled`);
}

const decoder = new TextDecoder();

describe('streamed responses from worker instances', () => {
  it('sends SSE events, one data line per item, ending with the response', async () => {
    const res = await post('/stream/sse', { tag: 'sse', count: 3 });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(await res.text()).toBe('data: {"i":0}\n\ndata: {"i":1}\n\ndata: {"i":2}\n\n');
    expect(finished.get('sse')).toBe(3);
  });

  it('sends NDJSON lines', async () => {
    const res = await post('/stream/ndjson', { tag: 'ndjson', count: 3 });
    expect(res.headers.get('content-type')).toBe('application/x-ndjson');
    expect(await res.text()).toBe('{"i":0}\n{"i":1}\n{"i":2}\n');
  });

  it('sends raw bytes with the endpoint content type', async () => {
    const res = await post('/stream/bytes', { tag: 'bytes', count: 3, size: 4 });
    expect(res.headers.get('content-type')).toBe('audio/L16');
    expect([...new Uint8Array(await res.arrayBuffer())]).toEqual([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
  });

  it('delivers the first chunk before the second is produced', async () => {
    const res = await post('/stream/ndjson', { tag: 'gate', count: 2, gateAt: 1 });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(decoder.decode(first.value)).toBe('{"i":0}\n');
    expect(produced.get('gate')).toBe(1);
    new BroadcastChannel(PROGRESS_CHANNEL).postMessage({ release: 'gate' });
    const second = await reader.read();
    expect(decoder.decode(second.value)).toBe('{"i":1}\n');
    expect((await reader.read()).done).toBe(true);
  });

  it('ends an SSE stream that fails midway with an error event', async () => {
    const res = await post('/stream/sse', { tag: 'sse-fail', count: 5, failAt: 2 });
    expect(res.status).toBe(200);
    const error = { error: "Model 'streamer' failed in StreamModel.sse: failed at item 2", code: 'SF_ERR_EXECUTION_FAILED' };
    expect(await res.text()).toBe(`data: {"i":0}\n\ndata: {"i":1}\n\nevent: error\ndata: ${JSON.stringify(error)}\n\n`);
    expect(finished.get('sse-fail')).toBe(2);
  });

  it('ends an NDJSON stream that fails midway with an error line', async () => {
    const res = await post('/stream/ndjson', { tag: 'ndjson-fail', count: 5, failAt: 1 });
    const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toEqual([{ i: 0 }, { error: "Model 'streamer' failed in StreamModel.ndjson: failed at item 1", code: 'SF_ERR_EXECUTION_FAILED' }]);
  });

  it('breaks the connection of a bytes stream that fails midway', async () => {
    const res = await post('/stream/bytes', { tag: 'bytes-fail', count: 5, failAt: 2 });
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
    const after = await post('/stream/bytes', { tag: 'bytes-after', count: 1 });
    expect([...new Uint8Array(await after.arrayBuffer())]).toEqual([0, 0, 0, 0]);
  });

  it('answers a failure before the first chunk with a JSON error', async () => {
    const failed = await post('/stream/sse', { tag: 'early', count: 5, failAt: 0 });
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ error: "Model 'streamer' failed in StreamModel.sse: failed at item 0", code: 'SF_ERR_EXECUTION_FAILED' });

    const notIterable = await post('/stream/not-iterable', { tag: 'x', count: 1 });
    expect(notIterable.status).toBe(500);
    expect(await notIterable.json()).toEqual({
      error: "StreamModel.notIterable declares stream: 'ndjson' but returned Object: make it an async generator (`async *notIterable(...)`) or return an AsyncIterable.",
      code: 'SF_ERR_STREAM_NOT_ITERABLE',
    });

    const notBytes = await post('/stream/not-bytes', { tag: 'not-bytes', count: 3 });
    expect(notBytes.status).toBe(500);
    expect(await notBytes.json()).toEqual({
      error: "StreamModel.notBytes streams 'bytes' but yielded Object: yield Buffer or Uint8Array chunks, or use stream: 'ndjson'.",
      code: 'SF_ERR_STREAM_CHUNK_NOT_BYTES',
    });
    expect(finished.get('not-bytes')).toBe(1);
  });

  it('validates the request before streaming', async () => {
    const res = await post('/stream/sse', { tag: 'bad', count: -1 });
    expect(res.status).toBe(422);
  });

  it('stops the generator when the client disconnects, and frees the instance', async () => {
    const res = await open('/stream/ndjson', { tag: 'gone', count: 1_000_000, delayMs: 1 });
    expect(await firstChunk(res)).toMatch(/^\{"i":0\}\n/);
    res.destroy();
    const total = await waitFor(() => finished.get('gone'), "the generator's finally block");
    expect(total).toBeLessThan(1_000_000);
    await sleep(50);
    expect(produced.get('gone')).toBe(total);

    const next = await post('/stream/ndjson', { tag: 'after-gone', count: 2 });
    expect(await next.text()).toBe('{"i":0}\n{"i":1}\n');
  });

  it('bounds what the worker produces ahead of a client that does not read', async () => {
    const chunkBytes = 4096;
    const res = await post('/stream/ndjson', { tag: 'slow', count: 10_000, size: chunkBytes });
    expect(res.status).toBe(200);
    const stalled = await stalledAt('slow');
    // The credit (8 chunks) plus what the socket buffers (kernel and HTTP client, a few MiB) hold:
    // far from the 40 MB the generator would produce unchecked.
    expect(stalled * chunkBytes).toBeLessThan(16 * 1024 * 1024);

    const lines = (await res.text()).trim().split('\n');
    expect(lines).toHaveLength(10_000);
    lines.forEach((line, i) => expect((JSON.parse(line) as { i: number }).i).toBe(i));
    expect(finished.get('slow')).toBe(10_000);
  });

  it('documents each stream content type in OpenAPI', async () => {
    const doc = (await server.openapi()) as { paths: Record<string, { post: { responses: Record<string, { content: Record<string, unknown> }> } }> };
    expect(Object.keys(doc.paths['/stream/sse'].post.responses['200'].content)).toEqual(['text/event-stream']);
    expect(Object.keys(doc.paths['/stream/ndjson'].post.responses['200'].content)).toEqual(['application/x-ndjson']);
    expect(doc.paths['/stream/bytes'].post.responses['200'].content).toEqual({ 'audio/L16': { schema: { type: 'string', format: 'binary' } } });
  });
});

describe('streamed responses from inline instances', () => {
  it('streams NDJSON lines', async () => {
    const res = await post('/inline/ndjson', { tag: 'inline', count: 3 });
    expect(await res.text()).toBe('{"i":0}\n{"i":1}\n{"i":2}\n');
    expect(finished.get('inline')).toBe(3);
  });

  it('stops the generator when the client disconnects', async () => {
    const res = await open('/inline/ndjson', { tag: 'inline-gone', count: 1_000_000, delayMs: 1 });
    expect(await firstChunk(res)).toMatch(/^\{"i":0\}\n/);
    res.destroy();
    expect(await waitFor(() => finished.get('inline-gone'), "the generator's finally block")).toBeLessThan(1_000_000);
    const next = await post('/inline/ndjson', { tag: 'inline-after', count: 1 });
    expect(await next.text()).toBe('{"i":0}\n');
  });
});

describe('the credit between a worker and its consumer', () => {
  it('lets the worker produce exactly its credit until chunks are taken, then everything in order', async () => {
    const context = { modelName: 'streamer', modelVersion: '1', instanceName: 'streamer_9', instanceIndex: 9, instanceCount: 1, deviceKind: 'cpu' as const, deviceId: 0, modelDir: '.', config: {} };
    const instance = new WorkerInstance(9, moduleUrl, context, { onCrash: () => undefined }, () => Promise.reject(new Error('no infer')));
    await instance.start();
    try {
      const request = { payload: { tag: 'credit', count: 10_000 }, info: { requestId: 'r1', params: {}, query: {}, headers: {} } };
      const channel = instance.openStream({ kind: 'endpoint', methodName: 'ndjson', batched: false, requests: [request] }, 5);
      await channel.started;
      expect(await stalledAt('credit')).toBe(5);

      const items: unknown[] = [];
      for await (const item of channel) items.push(item);
      expect(items).toEqual(Array.from({ length: 10_000 }, (_, i) => ({ i })));
      await channel.finished;
      expect(await waitFor(() => finished.get('credit'), "the generator's finally block")).toBe(10_000);
    } finally {
      await instance.stop();
    }
  });
});
