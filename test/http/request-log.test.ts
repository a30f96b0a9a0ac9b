import 'reflect-metadata';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { Endpoint, Instances, Model, ServeFnServer } from '../../src/index.js';

@Model({ name: 'echo' })
@Instances(1, { inline: true })
class Echo {
  @Endpoint('/echo')
  async echo(): Promise<{ ok: boolean }> {
    return { ok: true };
  }
}

const servers: ServeFnServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A server whose JSON log lines are collected, parsed. */
async function loggedServer(): Promise<{ server: ServeFnServer; lines: Record<string, unknown>[] }> {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const server = new ServeFnServer({ models: [Echo], logger: { level: 'info', stream }, collectProcessMetrics: false });
  servers.push(server);
  await server.start();
  return { server, lines };
}

describe('request log', () => {
  it('writes one line per request, uvicorn style: method, path, status, duration', async () => {
    const { server, lines } = await loggedServer();
    lines.length = 0;
    expect((await server.app.inject({ method: 'POST', url: '/echo', payload: {} })).statusCode).toBe(200);
    expect((await server.app.inject({ method: 'GET', url: '/nowhere?x=1' })).statusCode).toBe(404);
    expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/^POST \/echo 200 \d+\.\d ms$/), expect.stringMatching(/^GET \/nowhere\?x=1 404 \d+\.\d ms$/)]);
    expect(lines.every((l) => l.level === 30 && typeof l.reqId === 'string')).toBe(true);
  });
});
