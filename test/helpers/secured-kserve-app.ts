import fastify, { type FastifyInstance, type InjectOptions } from 'fastify';
import { afterEach } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { kserveProtocol, type KserveProtocolOptions } from '../../src/protocol/kserve-protocol.js';
import { installErrorHandling } from '../../src/server/error-handler.js';
import { securityPlugin, type SecurityOptions } from '../../src/server/security-plugin.js';
import { FakeRepository, simpleModel } from '../protocol/fake-repository.js';

/**
 * The /v2 protocol over one fake `simple` model, in ServeFnServer's order: error handling, the
 * security hooks, then the protocol. Call in a test file's scope: each app it serves is closed
 * after its test.
 */
export function securedKserveApps(): (security?: SecurityOptions, protocol?: Pick<KserveProtocolOptions, 'sharedMemory' | 'traceSettings'>) => Promise<FastifyInstance> {
  const apps: FastifyInstance[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });
  return async (security = {}, protocol = {}) => {
    const app = fastify({ logger: false });
    apps.push(app);
    installErrorHandling(app, { bodyLimit: 1024 * 1024, exposeErrors: false });
    await securityPlugin(app, security);
    await app.register(kserveProtocol, {
      repository: new FakeRepository([simpleModel()]),
      recorder: new InferenceRecorder({ collectProcessMetrics: false }),
      serverName: 'serve-fn',
      serverVersion: '0.1.0',
      ready: () => true,
      ...protocol,
    });
    await app.ready();
    return app;
  };
}

/** A request's status and JSON body (undefined when the body is empty). */
export async function answer(app: FastifyInstance, options: InjectOptions): Promise<{ status: number; body: unknown }> {
  const res = await app.inject(options);
  return { status: res.statusCode, body: res.body === '' ? undefined : res.json() };
}
