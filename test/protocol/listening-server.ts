import { rmSync } from 'node:fs';
import { Client, credentials } from '@grpc/grpc-js';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import { ServeFnServer, type ServeOptions } from '../../src/serve-fn-server.js';

export interface ListeningServer {
  readonly server: ServeFnServer;
  /** A gRPC client of the server's port, connected once it listens. */
  readonly grpc: () => Client;
  inject(method: 'GET' | 'POST', url: string, payload?: unknown): Promise<LightMyRequestResponse>;
}

/**
 * A server listening on HTTP and gRPC for the tests of one describe block, closed after them with
 * the scratch repository it serves from.
 */
export function listeningServer(options: Omit<ServeOptions, 'grpc' | 'logger' | 'collectProcessMetrics'>, scratch: string): ListeningServer {
  const server = new ServeFnServer({ ...options, grpc: { port: 0 }, logger: false, collectProcessMetrics: false });
  let client: Client | undefined;
  beforeAll(async () => {
    await server.listen(0, '127.0.0.1');
    client = new Client(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
  });
  afterAll(async () => {
    client?.close();
    await server.close();
    rmSync(scratch, { recursive: true, force: true });
  });
  return {
    server,
    grpc: () => client!,
    inject: (method, url, payload) => server.app.inject({ method, url, payload: payload as object }),
  };
}
