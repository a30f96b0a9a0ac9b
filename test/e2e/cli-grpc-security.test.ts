import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, credentials, Metadata, status, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../protocol/grpc-raw.js';
import { startCli, type RunningCli } from './cli-harness.js';

const KEY = 'sk-0123456789abcdef';

function serverMetadata(port: number, creds: ChannelCredentials, md: Metadata): Promise<status> {
  const client = new Client(`127.0.0.1:${port}`, creds, { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' });
  return call(client, 'ServerMetadata', Buffer.alloc(0), md, { deadline: Date.now() + 10_000 })
    .then(() => status.OK, (err: ServiceError) => err.code)
    .finally(() => client.close());
}

function bearer(key: string): Metadata {
  const md = new Metadata();
  md.add('authorization', `Bearer ${key}`);
  return md;
}

describe('serve-fn start with an API key and TLS', () => {
  let dir: string;
  let cli: RunningCli | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'serve-fn-cli-grpc-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'pipe' });
  });
  afterAll(async () => {
    if (cli) expect(await cli.stop()).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves gRPC over TLS and asks it for the key', async () => {
    cli = await startCli(['start', 'test/fixtures/cli/greeter-model.ts', '--host', '127.0.0.1'], {
      SERVE_FN_API_KEY: KEY,
      SERVE_FN_TLS_CERT: join(dir, 'cert.pem'),
      SERVE_FN_TLS_KEY: join(dir, 'key.pem'),
    });
    const port = Number((await cli.waitForOutput(/"grpcPort":(\d+)/))[1]);
    const trusted = (): ChannelCredentials => credentials.createSsl(readFileSync(join(dir, 'cert.pem')));
    expect(await serverMetadata(port, trusted(), new Metadata())).toBe(status.UNAUTHENTICATED);
    expect(await serverMetadata(port, trusted(), bearer('sk-wrong'))).toBe(status.UNAUTHENTICATED);
    expect(await serverMetadata(port, trusted(), bearer(KEY))).toBe(status.OK);
    expect(await serverMetadata(port, credentials.createInsecure(), bearer(KEY))).toBe(status.UNAVAILABLE);
  });
});
