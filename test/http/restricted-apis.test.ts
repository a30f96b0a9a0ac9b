import type { FastifyInstance, InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { SystemSharedMemoryRegistry } from '../../src/protocol/system-shared-memory/registry.js';
import { DEV_CLIENT_HEADER, parseApiRestriction } from '../../src/server/restricted-apis.js';
import type { SecurityOptions } from '../../src/server/security-plugin.js';
import { answer, securedKserveApps } from '../helpers/secured-kserve-app.js';

const SECRET = 's3cret-0123456789';
const KEY = 'sk-0123456789abcdef';
const REMOTE = '192.0.2.2';
const LOCAL_ONLY = (group: string) => ({
  error: `This API is restricted to clients on the server's own host; to serve others, set --http-restricted-api=${group}:<header>=<value> and send that header.`,
  code: 'SF_ERR_API_LOCAL_ONLY',
});
const RESTRICTED = { error: "This API is restricted, expecting header 'admin-key'", code: 'SF_ERR_API_RESTRICTED' };

const securedApp = securedKserveApps();
const serve = (security: SecurityOptions = {}, sharedMemory = new SystemSharedMemoryRegistry()): Promise<FastifyInstance> => securedApp(security, { sharedMemory });

const shmStatus = (remoteAddress: string, headers: Record<string, string> = {}): InjectOptions => ({ method: 'GET', url: '/v2/systemsharedmemory/status', remoteAddress, headers });
const repositoryIndex = (remoteAddress: string, headers: Record<string, string> = {}): InjectOptions => ({ method: 'POST', url: '/v2/repository/index', remoteAddress, headers });

describe('restricted APIs over HTTP, by default', () => {
  it('answers shared memory and repository control to a loopback client', async () => {
    const app = await serve();
    expect(await answer(app, shmStatus('127.0.0.1'))).toEqual({ status: 200, body: [] });
    expect(await answer(app, shmStatus('::1'))).toEqual({ status: 200, body: [] });
    expect(await answer(app, repositoryIndex('::ffff:127.0.0.1'))).toEqual({ status: 200, body: [{ name: 'simple', version: '1', state: 'READY' }] });
  });

  it('refuses them to a remote client that serve-fn dev forwards from loopback, and believes the forwarded name only from loopback', async () => {
    const app = await serve();
    expect(await answer(app, shmStatus('127.0.0.1', { [DEV_CLIENT_HEADER]: REMOTE }))).toEqual({ status: 403, body: LOCAL_ONLY('shared-memory') });
    expect(await answer(app, repositoryIndex('::1', { [DEV_CLIENT_HEADER]: REMOTE }))).toEqual({ status: 403, body: LOCAL_ONLY('model-repository') });
    expect(await answer(app, shmStatus('127.0.0.1', { [DEV_CLIENT_HEADER]: '127.0.0.1' }))).toEqual({ status: 200, body: [] });
    expect(await answer(app, shmStatus(REMOTE, { [DEV_CLIENT_HEADER]: '127.0.0.1' }))).toEqual({ status: 403, body: LOCAL_ONLY('shared-memory') });
  });

  it('refuses them to a remote client with 403, and registers nothing it sent', async () => {
    const sharedMemory = new SystemSharedMemoryRegistry();
    const app = await serve({}, sharedMemory);
    expect(await answer(app, shmStatus(REMOTE))).toEqual({ status: 403, body: LOCAL_ONLY('shared-memory') });
    const register = { method: 'POST', url: '/v2/systemsharedmemory/region/r/register', remoteAddress: REMOTE, payload: { key: '/victim', byte_size: 64 } } as const;
    expect(await answer(app, register)).toEqual({ status: 403, body: LOCAL_ONLY('shared-memory') });
    expect(await answer(app, { method: 'POST', url: '/v2/cudasharedmemory/unregister', remoteAddress: REMOTE })).toEqual({ status: 403, body: LOCAL_ONLY('shared-memory') });
    expect(sharedMemory.status()).toEqual([]);
    expect(await answer(app, repositoryIndex(REMOTE))).toEqual({ status: 403, body: LOCAL_ONLY('model-repository') });
    expect(await answer(app, { method: 'POST', url: '/v2/repository/models/simple/load', remoteAddress: REMOTE })).toEqual({ status: 403, body: LOCAL_ONLY('model-repository') });
    expect(await answer(app, { method: 'POST', url: '/v2/repository/models/simple/unload', remoteAddress: REMOTE })).toEqual({ status: 403, body: LOCAL_ONLY('model-repository') });
  });

  it('leaves inference, metadata, configuration and statistics open to a remote client', async () => {
    const app = await serve();
    expect((await app.inject({ method: 'GET', url: '/v2/models/simple', remoteAddress: REMOTE })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v2/models/simple/config', remoteAddress: REMOTE })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/v2/models/stats', remoteAddress: REMOTE })).statusCode).toBe(200);
    const zeros = Array.from({ length: 16 }, () => 0);
    const inputs = ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], data: zeros }));
    expect((await app.inject({ method: 'POST', url: '/v2/models/simple/infer', remoteAddress: REMOTE, payload: { inputs } })).statusCode).toBe(200);
  });
});

describe("restricted APIs over HTTP, with Triton's --http-restricted-api", () => {
  const restricted = (text: string): SecurityOptions => ({ restrictedApis: { http: [parseApiRestriction(text)] } });

  it('serves a remote client that sends the header with the value', async () => {
    const app = await serve(restricted(`shared-memory,model-repository:admin-key=${SECRET}`));
    expect(await answer(app, shmStatus(REMOTE, { 'admin-key': SECRET }))).toEqual({ status: 200, body: [] });
    expect((await answer(app, repositoryIndex(REMOTE, { 'Admin-Key': SECRET }))).status).toBe(200);
  });

  it("refuses without the header, with a wrong value, and from loopback too, with Triton's 403 and message", async () => {
    const app = await serve(restricted(`shared-memory,model-repository:admin-key=${SECRET}`));
    expect(await answer(app, shmStatus(REMOTE))).toEqual({ status: 403, body: RESTRICTED });
    expect(await answer(app, shmStatus(REMOTE, { 'admin-key': 'wrong' }))).toEqual({ status: 403, body: RESTRICTED });
    expect(await answer(app, shmStatus('127.0.0.1'))).toEqual({ status: 403, body: RESTRICTED });
    expect(await answer(app, repositoryIndex('127.0.0.1', { 'x-admin-key': SECRET }))).toEqual({ status: 403, body: RESTRICTED });
  });

  it('restricts configuration and statistics when named, on every path they have', async () => {
    const app = await serve(restricted(`model-config,statistics:admin-key=${SECRET}`));
    for (const url of ['/v2/models/simple/config', '/v2/models/simple/versions/1/config', '/v2/models/stats', '/v2/models/simple/stats', '/v2/models/simple/versions/1/stats']) {
      expect(await answer(app, { method: 'GET', url, remoteAddress: '127.0.0.1' }), url).toEqual({ status: 403, body: RESTRICTED });
      expect((await app.inject({ method: 'GET', url, remoteAddress: REMOTE, headers: { 'admin-key': SECRET } })).statusCode, url).toBe(200);
    }
    // Shared memory, which the setting does not name, keeps its loopback default.
    expect(await answer(app, shmStatus(REMOTE, { 'admin-key': SECRET }))).toEqual({ status: 403, body: LOCAL_ONLY('shared-memory') });
  });

  it('asks for the API key first: a caller without it learns nothing of the restriction', async () => {
    const app = await serve({ apiKey: KEY, ...restricted(`shared-memory:admin-key=${SECRET}`) });
    expect((await answer(app, shmStatus(REMOTE, { 'admin-key': SECRET }))).status).toBe(401);
    expect(await answer(app, shmStatus(REMOTE, { authorization: `Bearer ${KEY}` }))).toEqual({ status: 403, body: RESTRICTED });
    expect(await answer(app, shmStatus(REMOTE, { authorization: `Bearer ${KEY}`, 'admin-key': SECRET }))).toEqual({ status: 200, body: [] });
  });
});
