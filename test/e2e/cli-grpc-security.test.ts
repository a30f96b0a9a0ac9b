import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, credentials, Metadata, status, type ChannelCredentials, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, failure } from '../protocol/grpc-raw.js';
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

/** This host's first non-loopback IPv4 address: a request to it comes from a non-loopback peer. */
const EXTERNAL = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const SECRET = 's3cret-0123456789';

describe('serve-fn start on 0.0.0.0: shared memory and repository control', () => {
  it.skipIf(EXTERNAL === undefined)('answers remote clients only with the header a flag or variable sets, on HTTP and gRPC, and loopback ones by default', async () => {
    const cli = await startCli(
      ['start', 'test/fixtures/cli/greeter-model.ts', '--host', '0.0.0.0', '--http-restricted-api', `model-repository:admin-key=${SECRET}`],
      { SERVE_FN_GRPC_RESTRICTED_PROTOCOL: `shared-memory:admin-key=${SECRET}` },
    );
    try {
      const grpcPort = Number((await cli.waitForOutput(/"grpcPort":(\d+)/))[1]);
      const http = (host: string, method: string, path: string, headers: Record<string, string> = {}) =>
        fetch(`http://${host}:${cli.port}/v2${path}`, { method, headers }).then(async (res) => [res.status, await res.json()]);
      // The default: shared memory for loopback clients only.
      expect(await http('127.0.0.1', 'GET', '/systemsharedmemory/status')).toEqual([200, []]);
      expect(await http(EXTERNAL!, 'GET', '/systemsharedmemory/status')).toEqual([403, {
        error: "This API is restricted to clients on the server's own host; to serve others, set --http-restricted-api=shared-memory:<header>=<value> and send that header.",
        code: 'SF_ERR_API_LOCAL_ONLY',
      }]);
      // --http-restricted-api: the header, from every client.
      expect(await http(EXTERNAL!, 'POST', '/repository/index', { 'admin-key': SECRET })).toEqual([200, [{ name: 'greeter', version: '1', state: 'READY' }]]);
      expect(await http('127.0.0.1', 'POST', '/repository/index')).toEqual([403, { error: "This API is restricted, expecting header 'admin-key'", code: 'SF_ERR_API_RESTRICTED' }]);

      const remote = new Client(`${EXTERNAL}:${grpcPort}`, credentials.createInsecure());
      try {
        const grpc = (method: string, md: Metadata = new Metadata()) => call(remote, method, Buffer.alloc(0), md, { deadline: Date.now() + 10_000 });
        const admin = new Metadata();
        admin.add('triton-grpc-protocol-admin-key', SECRET);
        // SERVE_FN_GRPC_RESTRICTED_PROTOCOL: Triton's metadata key.
        expect([...(await grpc('SystemSharedMemoryStatus', admin))]).toEqual([]);
        expect(await failure(grpc('SystemSharedMemoryStatus'))).toEqual([status.UNAVAILABLE, "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'"]);
        // The HTTP flag does not open gRPC's repository control: the default holds there.
        expect((await failure(grpc('RepositoryIndex', admin)))[0]).toBe(status.UNAVAILABLE);
      } finally {
        remote.close();
      }
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 60_000);

  it('refuses a setting it cannot read before serving, from a flag or a variable', async () => {
    const flag = await startCli(['start', 'test/fixtures/cli/greeter-model.ts', '--host', '127.0.0.1', '--http-restricted-api', `inference:admin-key=${SECRET}`]);
    expect(await flag.waitForExit(30_000)).toBe(1);
    expect(flag.output()).toContain("option '--http-restricted-api <apis:header=value>' argument 'inference:admin-key=");
    expect(flag.output()).toContain("unknown API 'inference'");
    const variable = await startCli(['start', 'test/fixtures/cli/greeter-model.ts', '--host', '127.0.0.1'], {
      SERVE_FN_GRPC_RESTRICTED_PROTOCOL: `shared-memory:a=${SECRET} shared-memory:b=${SECRET}`,
    });
    expect(await variable.waitForExit(30_000)).toBe(1);
    expect(variable.output()).toContain("Environment variable SERVE_FN_GRPC_RESTRICTED_PROTOCOL is invalid: API 'shared-memory' can not be specified in multiple config groups.");
    expect(variable.output()).not.toContain('serve-fn ready');
  }, 60_000);
});
