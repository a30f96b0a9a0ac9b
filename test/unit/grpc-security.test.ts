import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, credentials, Metadata, Server, status, type ChannelCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadInferenceService, startGrpcServer, type GrpcServerHandle } from '../../src/protocol/grpc/grpc-server.js';
import { GRPC_HEALTH_METHODS, GRPC_METHOD_GROUPS, grpcAuthInterceptors, grpcServerCredentials, type GrpcSecurityOptions } from '../../src/protocol/grpc/grpc-security.js';
import { API_GROUPS, parseApiRestriction } from '../../src/server/restricted-apis.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import type { TlsFiles } from '../../src/server/security-plugin.js';
import { FakeRepository, simpleModel } from '../protocol/fake-repository.js';
import { exchange, failure, call as rawCall, same } from '../protocol/grpc-raw.js';
import { parse, pb, strings } from '../protocol/protobuf-wire.js';

const KEY = 'sk-0123456789abcdef';
const UNAUTHENTICATED: [status, string] = [status.UNAUTHENTICATED, "Missing or invalid API key: send it as 'Authorization: Bearer <key>' or 'X-API-Key: <key>'."];
const LIVE = [0x08, 0x01];
/** Bounds a call that never connects (a TLS client meeting a plaintext port waits for it otherwise). */
const CALL_DEADLINE_MS = 10_000;

const open: { close(): Promise<void> }[] = [];

afterEach(async () => {
  for (const resource of open.splice(0).reverse()) await resource.close();
});

function track(server: GrpcServerHandle, client: Client): Client {
  open.push({ close: () => server.close(100) });
  open.push({ close: async () => client.close() });
  return client;
}

async function connect(security: GrpcSecurityOptions): Promise<Client> {
  const server = await startGrpcServer({ repository: new FakeRepository([simpleModel()]), serverName: 'serve-fn', serverVersion: '0.1.0', recorder: new InferenceRecorder({ collectProcessMetrics: false }), ready: () => true, port: 0, host: '127.0.0.1', security });
  return track(server, new Client(`127.0.0.1:${server.port}`, credentials.createInsecure()));
}

function metadata(entries: Record<string, string> = {}): Metadata {
  const md = new Metadata();
  for (const [key, value] of Object.entries(entries)) md.add(key, value);
  return md;
}

const call = (client: Client, method: string, md: Metadata = metadata(), body: Buffer = Buffer.alloc(0)): Promise<Buffer> =>
  rawCall(client, method, body, md, { deadline: Date.now() + CALL_DEADLINE_MS });

const serverName = async (client: Client, md: Metadata): Promise<string[]> => strings(parse(await call(client, 'ServerMetadata', md)), 1);

describe('API key over gRPC', () => {
  it('names the health methods as the proto defines them', () => {
    const paths = Object.values(loadInferenceService().service).map((m) => m.path);
    for (const method of GRPC_HEALTH_METHODS) expect(paths).toContain(method);
    expect(GRPC_HEALTH_METHODS).toHaveLength(3);
  });

  it('refuses a call without a key, with a wrong key, or with the key under another scheme', async () => {
    const client = await connect({ apiKey: KEY });
    expect(await failure(call(client, 'ServerMetadata'))).toEqual(UNAUTHENTICATED);
    expect(await failure(call(client, 'ModelMetadata', metadata(), pb.string(1, 'simple')))).toEqual(UNAUTHENTICATED);
    expect(await failure(call(client, 'ServerMetadata', metadata({ authorization: 'Bearer sk-wrong' })))).toEqual(UNAUTHENTICATED);
    expect(await failure(call(client, 'ServerMetadata', metadata({ 'x-api-key': `${KEY}x` })))).toEqual(UNAUTHENTICATED);
    expect(await failure(call(client, 'ServerMetadata', metadata({ authorization: `Basic ${KEY}` })))).toEqual(UNAUTHENTICATED);
    expect(await failure(call(client, 'ServerMetadata', metadata({ authorization: KEY })))).toEqual(UNAUTHENTICATED);
  });

  it('accepts the key as a bearer token or as x-api-key', async () => {
    const client = await connect({ apiKey: KEY });
    expect(await serverName(client, metadata({ authorization: `Bearer ${KEY}` }))).toEqual(['serve-fn']);
    expect(await serverName(client, metadata({ authorization: `bearer ${KEY}` }))).toEqual(['serve-fn']);
    expect(await serverName(client, metadata({ 'x-api-key': KEY }))).toEqual(['serve-fn']);
    expect(await serverName(client, metadata({ authorization: 'Bearer sk-wrong', 'x-api-key': KEY }))).toEqual(['serve-fn']);
  });

  it('leaves ServerLive, ServerReady and ModelReady open by default', async () => {
    const client = await connect({ apiKey: KEY });
    expect([...(await call(client, 'ServerLive'))]).toEqual(LIVE);
    expect([...(await call(client, 'ServerReady'))]).toEqual(LIVE);
    expect([...(await call(client, 'ModelReady', metadata(), pb.string(1, 'simple')))]).toEqual(LIVE);
  });

  it('puts the health methods behind the key with protectHealth', async () => {
    const client = await connect({ apiKey: KEY, protectHealth: true });
    expect(await failure(call(client, 'ServerLive'))).toEqual(UNAUTHENTICATED);
    expect(await failure(call(client, 'ServerReady'))).toEqual(UNAUTHENTICATED);
    expect(await failure(call(client, 'ModelReady', metadata(), pb.string(1, 'simple')))).toEqual(UNAUTHENTICATED);
    expect([...(await call(client, 'ServerLive', metadata({ 'x-api-key': KEY })))]).toEqual(LIVE);
    expect([...(await call(client, 'ModelReady', metadata({ authorization: `Bearer ${KEY}` }), pb.string(1, 'simple')))]).toEqual(LIVE);
  });

  it('asks for nothing when no key is set', async () => {
    expect(grpcAuthInterceptors({})).toEqual([]);
    const client = await connect({});
    expect(await serverName(client, metadata())).toEqual(['serve-fn']);
  });
});

describe('API key on streaming calls', () => {
  const ECHO = '/test.Echo/Echo';
  const echoService = {
    Echo: { path: ECHO, requestStream: true, responseStream: true, requestSerialize: same, requestDeserialize: same, responseSerialize: same, responseDeserialize: same, originalName: 'Echo' },
  };
  let handled = 0;

  async function echoServer(): Promise<Client> {
    const server = new Server({ interceptors: grpcAuthInterceptors({ apiKey: KEY }) });
    server.addService(echoService, {
      Echo: (stream: ServerDuplexStream<Buffer, Buffer>) => {
        handled += 1;
        stream.on('data', (chunk: Buffer) => stream.write(chunk));
        stream.on('end', () => stream.end());
      },
    });
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpcServerCredentials(undefined), (err, p) => (err ? reject(err) : resolve(p))));
    const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
    open.push({ close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())) });
    open.push({ close: async () => client.close() });
    return client;
  }

  async function echo(client: Client, md: Metadata, chunks: string[]): Promise<string[]> {
    const received = await exchange(client, ECHO, chunks.map((chunk) => Buffer.from(chunk)), md);
    return received.map((chunk) => chunk.toString());
  }

  it('ends a bidirectional stream without the key before its handler runs, and serves it with the key', async () => {
    handled = 0;
    const client = await echoServer();
    expect(await failure(echo(client, metadata(), ['a', 'b']))).toEqual(UNAUTHENTICATED);
    expect(handled).toBe(0);
    expect(await echo(client, metadata({ authorization: `Bearer ${KEY}` }), ['a', 'b'])).toEqual(['a', 'b']);
    expect(handled).toBe(1);
  });
});

describe('TLS over gRPC', () => {
  let dir: string;
  let tls: TlsFiles;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'serve-fn-grpc-tls-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'pipe' });
    tls = { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function tlsServer(security: GrpcSecurityOptions, clientCredentials: () => ChannelCredentials): Promise<Client> {
    const server = await startGrpcServer({ repository: new FakeRepository([]), serverName: 'serve-fn', serverVersion: '0.1.0', recorder: new InferenceRecorder({ collectProcessMetrics: false }), ready: () => true, port: 0, host: '127.0.0.1', security, tls });
    // The certificate names localhost; Node warns when the TLS server name is an IP address.
    return track(server, new Client(`127.0.0.1:${server.port}`, clientCredentials(), { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' }));
  }

  it('serves a client that trusts the certificate', async () => {
    const client = await tlsServer({}, () => credentials.createSsl(tls.cert));
    expect([...(await call(client, 'ServerLive'))]).toEqual(LIVE);
  });

  it('gives a plaintext client no answer', async () => {
    const client = await tlsServer({}, () => credentials.createInsecure());
    const [code] = await failure(call(client, 'ServerLive'));
    expect(code).toBe(status.UNAVAILABLE);
  });

  it('checks the key inside TLS', async () => {
    const client = await tlsServer({ apiKey: KEY }, () => credentials.createSsl(tls.cert));
    expect(await failure(call(client, 'ServerMetadata'))).toEqual(UNAUTHENTICATED);
    expect(await serverName(client, metadata({ authorization: `Bearer ${KEY}` }))).toEqual(['serve-fn']);
  });
});

/** This host's first non-loopback IPv4 address: a call to it comes from a non-loopback peer. */
const EXTERNAL = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const SECRET = 's3cret-0123456789';
const LOCAL_ONLY: [status, string] = [
  status.UNAVAILABLE,
  "This protocol is restricted to clients on the server's own host; to serve others, set --grpc-restricted-protocol=shared-memory:<header>=<value> and send that header.",
];
const RESTRICTED: [status, string] = [status.UNAVAILABLE, "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'"];

describe('restricted protocols over gRPC', () => {
  /** One server on every interface, and a client through loopback and one through the external address. */
  async function clients(security: GrpcSecurityOptions): Promise<{ local: Client; remote: Client }> {
    const server = await startGrpcServer({ repository: new FakeRepository([simpleModel()]), serverName: 'serve-fn', serverVersion: '0.1.0', recorder: new InferenceRecorder({ collectProcessMetrics: false }), ready: () => true, port: 0, host: '0.0.0.0', security });
    const remote = new Client(`${EXTERNAL}:${server.port}`, credentials.createInsecure());
    open.push({ close: async () => remote.close() });
    return { local: track(server, new Client(`127.0.0.1:${server.port}`, credentials.createInsecure())), remote };
  }

  it("groups every RPC Triton's groups name, and no other", () => {
    const paths = new Set(Object.values(loadInferenceService().service).map((m) => m.path));
    for (const path of GRPC_METHOD_GROUPS.keys()) expect(paths.has(path), path).toBe(true);
    expect(new Set(GRPC_METHOD_GROUPS.values())).toEqual(new Set(API_GROUPS));
  });

  it.skipIf(EXTERNAL === undefined)('answers shared memory and repository control to loopback callers only by default', async () => {
    const { local, remote } = await clients({});
    expect([...(await call(local, 'SystemSharedMemoryStatus'))]).toEqual([]);
    expect(await failure(call(remote, 'SystemSharedMemoryStatus'))).toEqual(LOCAL_ONLY);
    expect(await failure(call(remote, 'SystemSharedMemoryRegister', metadata(), Buffer.concat([pb.string(1, 'r'), pb.string(2, '/victim'), pb.varint(4, 64)])))).toEqual(LOCAL_ONLY);
    expect((await failure(call(remote, 'RepositoryModelLoad', metadata(), pb.string(2, 'simple'))))[0]).toBe(status.UNAVAILABLE);
    expect(strings(parse(await call(local, 'RepositoryIndex')), 1)).toHaveLength(1);
    // The other RPCs stay open.
    expect(await serverName(remote, metadata())).toEqual(['serve-fn']);
    expect((await call(remote, 'ModelConfig', metadata(), pb.string(1, 'simple'))).byteLength).toBeGreaterThan(0);
  });

  it.skipIf(EXTERNAL === undefined)("asks every caller for triton-grpc-protocol-<key> once a setting names the group, as Triton", async () => {
    const { local, remote } = await clients({ restrictedApis: { grpc: [parseApiRestriction(`shared-memory,statistics:admin-key=${SECRET}`)] } });
    expect([...(await call(remote, 'SystemSharedMemoryStatus', metadata({ 'triton-grpc-protocol-admin-key': SECRET })))]).toEqual([]);
    expect(await failure(call(remote, 'SystemSharedMemoryStatus', metadata({ 'admin-key': SECRET })))).toEqual(RESTRICTED);
    expect(await failure(call(local, 'SystemSharedMemoryStatus'))).toEqual(RESTRICTED);
    expect(await failure(call(local, 'ModelStatistics', metadata({ 'triton-grpc-protocol-admin-key': 'wrong' })))).toEqual(RESTRICTED);
    expect((await call(local, 'ModelStatistics', metadata({ 'triton-grpc-protocol-admin-key': SECRET }))).byteLength).toBeGreaterThan(0);
  });

  it.skipIf(EXTERNAL === undefined)('asks for the API key first', async () => {
    const { remote } = await clients({ apiKey: KEY, restrictedApis: { grpc: [parseApiRestriction(`shared-memory:admin-key=${SECRET}`)] } });
    expect(await failure(call(remote, 'SystemSharedMemoryStatus', metadata({ 'triton-grpc-protocol-admin-key': SECRET })))).toEqual(UNAUTHENTICATED);
    expect(await failure(call(remote, 'SystemSharedMemoryStatus', metadata({ 'x-api-key': KEY })))).toEqual(RESTRICTED);
    expect([...(await call(remote, 'SystemSharedMemoryStatus', metadata({ 'x-api-key': KEY, 'triton-grpc-protocol-admin-key': SECRET })))]).toEqual([]);
  });
});
