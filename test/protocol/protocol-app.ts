import Fastify, { type FastifyInstance, type FastifyServerOptions, type LightMyRequestResponse } from 'fastify';
import { afterEach } from 'vitest';
import type { ModelRepository } from '../../src/inference/inference-model.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { kserveProtocol } from '../../src/protocol/kserve-protocol.js';
import type { SystemSharedMemoryRegistry } from '../../src/protocol/system-shared-memory/registry.js';
import { installErrorHandling } from '../../src/server/error-handler.js';
import { installJsonBodyParser } from '../../src/server/json-body-parser.js';
import { requestId } from '../../src/server/request-id.js';

/**
 * A fastify app shaped like ServeFnServer's: serve-fn's own error handling and JSON parser at the
 * root, a user JSON route, and the protocol plugin. Closed after each test.
 */

export interface ProtocolApp {
  readonly app: FastifyInstance;
  readonly recorder: InferenceRecorder;
  /** Flip to make the server not ready (draining). */
  serving: boolean;
}

const apps: FastifyInstance[] = [];

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

export async function protocolApp(
  repository: ModelRepository,
  options: { bodyLimit?: number; recorder?: InferenceRecorder; exposeErrors?: boolean; logger?: FastifyServerOptions['logger']; sharedMemory?: SystemSharedMemoryRegistry } = {},
): Promise<ProtocolApp> {
  const app = Fastify({ logger: options.logger ?? false, genReqId: requestId });
  apps.push(app);
  const recorder = options.recorder ?? new InferenceRecorder({ collectProcessMetrics: false, now: () => 1_700_000_000_000 });
  installErrorHandling(app, { bodyLimit: 1024 * 1024, exposeErrors: options.exposeErrors ?? false });
  installJsonBodyParser(app, 1024 * 1024);
  app.post('/user/echo', async (request) => ({ got: request.body }));
  const handle: ProtocolApp = { app, recorder, serving: true };
  await app.register(kserveProtocol, {
    repository,
    recorder,
    serverName: 'serve-fn',
    serverVersion: '0.1.0',
    ready: () => handle.serving,
    ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }),
    exposeErrors: options.exposeErrors ?? false,
    ...(options.sharedMemory === undefined ? {} : { sharedMemory: options.sharedMemory }),
  });
  await app.ready();
  return handle;
}

/** Status, headers and the exact bytes of a response. */
export function wire(res: LightMyRequestResponse): { status: number; type: string | undefined; body: string } {
  return { status: res.statusCode, type: res.headers['content-type'] as string | undefined, body: res.body };
}

/** A JSON infer request body written by hand as text, so the bytes on the wire are the test's own. */
export function postInfer(app: FastifyInstance, model: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: `/v2/models/${model}/infer`, headers: { 'content-type': 'application/json', ...headers }, payload: body });
}

/** JSON text followed by raw bytes, with Inference-Header-Content-Length set to the JSON's byte length. */
export function binaryBody(json: string, ...chunks: Buffer[]): { body: Buffer; headers: Record<string, string> } {
  const header = Buffer.from(json, 'utf8');
  return {
    body: Buffer.concat([header, ...chunks]),
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.byteLength) },
  };
}

/** Splits a binary response at its Inference-Header-Content-Length: the JSON text and the bytes after it. */
export function splitResponse(res: LightMyRequestResponse): { json: string; binary: Buffer } {
  const length = Number(res.headers['inference-header-content-length']);
  return { json: res.rawPayload.subarray(0, length).toString('utf8'), binary: res.rawPayload.subarray(length) };
}
