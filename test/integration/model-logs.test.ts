import 'reflect-metadata';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/index.js';
import { Chatty, ChattyInline } from '../fixtures/models/logging-model.js';

const moduleUrl = new URL('../fixtures/models/logging-model.ts', import.meta.url).href;
let server: ServeFnServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server whose JSON log lines are collected, parsed. */
async function loggedServer(): Promise<Record<string, unknown>[]> {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  server = new ServeFnServer({ models: [Chatty, ChattyInline], moduleUrl, logger: { level: 'info', stream }, collectProcessMetrics: false });
  await server.start();
  return lines;
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
}

describe('model logs', () => {
  it("writes a worker model's ctx.logger lines with the server's logger, with model, instance and level", async () => {
    const lines = await loggedServer();
    await until(() => lines.some((l) => l.msg === 'loaded'));
    expect(lines.find((l) => l.msg === 'loaded')).toMatchObject({ level: 30, model: 'chatty', version: '1', instance: 'chatty_0', vocabulary: 3, time: expect.any(Number) });
    expect(lines.some((l) => l.msg === 'below the server level')).toBe(false);
  });

  it("gives each request its id: on RequestInfo, and as reqId on info.logger's lines, which join the request's access line", async () => {
    const lines = await loggedServer();
    const res = await server!.app.inject({ method: 'POST', url: '/chatty', payload: {}, headers: { 'x-request-id': 'req-42' } });
    expect(res.json()).toEqual({ requestId: 'req-42' });
    await until(() => lines.some((l) => l.msg === 'saying'));
    expect(lines.find((l) => l.msg === 'saying')).toMatchObject({ level: 40, model: 'chatty', instance: 'chatty_0', reqId: 'req-42', words: 2 });
    expect(lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('POST /chatty 200'))).toMatchObject({ reqId: 'req-42' });

    const inline = await server!.app.inject({ method: 'POST', url: '/chatty-inline', payload: {} });
    const id = inline.headers['x-request-id'];
    expect(inline.json()).toEqual({ requestId: id });
    expect(lines.find((l) => l.msg === 'saying inline')).toMatchObject({ level: 40, model: 'chatty-inline', instance: 'chatty-inline_0', reqId: id });
  });

  it('logs the start and the end of the drain', async () => {
    const lines = await loggedServer();
    await server!.close();
    const messages = lines.map((l) => String(l.msg));
    const start = messages.findIndex((m) => m.startsWith('drain started'));
    const end = messages.findIndex((m) => m.startsWith('drain finished'));
    expect(start).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    expect(lines[end]).toMatchObject({ durationMs: expect.any(Number) });
    server = undefined;
  });
});
