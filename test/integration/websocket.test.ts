import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IsString } from 'class-validator';
import { Instances, Model, ServeFnServer, WebSocketEndpoint } from '../../src/index.js';
import { INPUT_WINDOW_BYTES } from '../../src/server/socket-connection.js';
import { SocketModel } from '../fixtures/models/socket-model.js';

const scratch = mkdtempSync(join(tmpdir(), 'serve-fn-sockets-'));
const journal = join(scratch, 'journal.log');
// Workers copy process.env when they start, so the journal path must be set before any starts.
process.env.SERVE_FN_TEST_JOURNAL = journal;
writeFileSync(journal, '');
const journalLines = (): string[] => readFileSync(journal, 'utf8').split('\n').filter(Boolean);

let server: ServeFnServer;
let base: string;

beforeAll(async () => {
  const moduleUrl = new URL('../fixtures/models/socket-model.ts', import.meta.url).href;
  server = new ServeFnServer({ models: [SocketModel], moduleUrl, logger: false, collectProcessMetrics: false });
  await server.start();
  base = (await server.app.listen({ port: 0, host: '127.0.0.1' })).replace('http', 'ws');
});

afterAll(async () => {
  await server.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** A client that collects every message and the close, so tests can await them in order. */
class Client {
  readonly ws: WebSocket;
  private readonly inbox: unknown[] = [];
  private waiting?: () => void;
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;

  constructor(query = '') {
    this.ws = new WebSocket(`${base}/ws/echo${query}`);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      this.inbox.push(isBinary ? Buffer.from(data) : JSON.parse(data.toString()));
      this.waiting?.();
    });
    this.closed = new Promise((resolve) => this.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  }

  async next(): Promise<any> {
    while (this.inbox.length === 0) await new Promise<void>((resolve) => (this.waiting = resolve));
    return this.inbox.shift();
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' || Buffer.isBuffer(message) ? message : JSON.stringify(message));
  }
}

describe('a @WebSocketEndpoint on two worker-thread instances', () => {
  it('keeps each connection on one instance, with its own state, and spreads connections over instances', async () => {
    const clients = [0, 1, 2, 3].map((i) => new Client(`?name=sticky-${i}`));
    const hellos = await Promise.all(clients.map((c) => c.next()));
    for (const hello of hellos) expect(hello.sameAsThread).toBe(true);
    expect(hellos.map((h) => h.instance).sort()).toEqual([0, 0, 1, 1]);
    for (let round = 1; round <= 3; round++) {
      clients.forEach((c, i) => c.send({ op: 'echo', text: `c${i} r${round}` }));
      const replies = await Promise.all(clients.map((c) => c.next()));
      replies.forEach((reply, i) => expect(reply).toEqual({ text: `c${i} r${round}`, count: round, instance: hellos[i].instance }));
    }
    for (const c of clients) c.ws.close();
    await Promise.all(clients.map((c) => c.closed));
    await expect.poll(journalLines).toEqual(expect.arrayContaining([0, 1, 2, 3].map((i) => `closed sticky-${i} after 3`)));
  });

  it('answers an invalid message with an error message and keeps the connection open', async () => {
    const c = new Client();
    await c.next();
    c.send('{not json');
    const bad = await c.next();
    expect(bad.code).toBe('SF_ERR_MESSAGE_INVALID_JSON');
    expect(bad.error).toMatch(/^Message is not valid JSON: /);
    c.send({ op: 'shout', text: 1 });
    const invalid = await c.next();
    expect(invalid.code).toBe('SF_ERR_MESSAGE_INVALID');
    expect(invalid.detail.map((d: { loc: string[] }) => d.loc)).toEqual([['message', 'op'], ['message', 'text']]);
    c.send({ op: 'echo', text: 'still here' });
    expect(await c.next()).toMatchObject({ text: 'still here', count: 1 });
    c.ws.close();
    expect((await c.closed).code).toBe(1005);
  });

  it('answers an invalid message after the replies to the messages sent before it, and before those after', async () => {
    const c = new Client();
    await c.next();
    for (let i = 1; i <= 20; i++) c.send({ op: 'echo', text: `m${i}` });
    c.send({ op: 'shout' });
    c.send('{not json');
    c.send({ op: 'echo', text: 'after' });
    const answers: string[] = [];
    for (let i = 0; i < 23; i++) {
      const answer = await c.next();
      answers.push(answer.code ?? answer.text);
    }
    expect(answers).toEqual([...Array.from({ length: 20 }, (_, i) => `m${i + 1}`), 'SF_ERR_MESSAGE_INVALID', 'SF_ERR_MESSAGE_INVALID_JSON', 'after']);
    c.ws.close();
    await c.closed;
  });

  it('hands binary messages over as Buffers and sends Buffers back as binary frames', async () => {
    const c = new Client();
    await c.next();
    c.send(Buffer.from([1, 2, 3, 250]));
    expect(await c.next()).toEqual(Buffer.from([250, 3, 2, 1]));
    c.ws.close();
    await c.closed;
  });

  it('closes with 1008 and the reason when the model refuses with a 4xx error, after sending it as a message', async () => {
    const c = new Client();
    await c.next();
    c.send({ op: 'echo' });
    await c.next();
    c.send({ op: 'refuse' });
    expect(await c.next()).toEqual({ error: 'cannot go on after message 2', code: 'SF_ERR_BAD_REQUEST' });
    expect(await c.closed).toEqual({ code: 1008, reason: 'cannot go on after message 2' });
  });

  it('closes with 1011 when the model fails', async () => {
    const c = new Client();
    await c.next();
    c.send({ op: 'break' });
    const failure = await c.next();
    expect(failure.code).toBe('SF_ERR_EXECUTION_FAILED');
    expect(failure.error).toBe("Model 'sockets' failed in SocketModel.echo: the model broke");
    expect((await c.closed).code).toBe(1011);
  });

  it('closes an idle connection with 1001 after idleTimeoutMs, and the model sees its input end', async () => {
    const c = new Client('?name=idle');
    await c.next();
    const started = Date.now();
    const idle = await c.next();
    expect(idle).toEqual({ error: 'Connection closed after 1500 ms without a message from the client.', code: 'SF_ERR_SOCKET_IDLE' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    expect(await c.closed).toEqual({ code: 1001, reason: 'Connection closed after 1500 ms without a message from the client.' });
    await expect.poll(journalLines).toContain('closed idle after 0');
  });

  it('stops the model when the client goes away', async () => {
    const c = new Client('?name=gone');
    await c.next();
    c.send({ op: 'echo' });
    await c.next();
    c.ws.terminate();
    await expect.poll(journalLines).toContain('closed gone after 1');
  });

  it('refuses a connection past maxConnections with an HTTP 503 before the upgrade, and accepts again once one closes', async () => {
    const clients = [0, 1, 2, 3, 4].map(() => new Client());
    await Promise.all(clients.map((c) => c.next()));
    const refused = await new Promise<{ status: number; body: string }>((resolve) => {
      const ws = new WebSocket(`${base}/ws/echo`);
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
    });
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toEqual({ error: 'WebSocket endpoint /ws/echo has 5 open connections, its limit; try again later.', code: 'SF_ERR_SOCKET_LIMIT' });
    clients[0].ws.close();
    await clients[0].closed;
    await expect.poll(async () => {
      const again = new Client();
      const ok = await again.opened.then(() => true, () => false);
      again.ws.close();
      return ok;
    }).toBe(true);
    for (const c of clients.slice(1)) c.ws.close();
    await Promise.all(clients.map((c) => c.closed));
  });

  it('holds upgrades that arrive together to maxConnections, refusing the rest with 503, and frees every slot when they close', async () => {
    // injectWS runs every upgrade's hooks before any reaches wsHandler, as an async hook between the
    // limit check and the upgrade would on a real socket.
    const badHandshake = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(new URL(base).port), '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk: Buffer) => (answer += chunk));
        socket.on('close', () => resolve(answer.split('\r\n')[0]));
        socket.on('error', reject);
        socket.write('GET /ws/echo HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: bad\r\n\r\n');
      });
    const openTogether = async (count: number): Promise<{ opened: WebSocket[]; refused: string[] }> => {
      const results = await Promise.allSettled(Array.from({ length: count }, () => server.app.injectWS('/ws/echo')));
      return {
        opened: results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])),
        refused: results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : [])),
      };
    };
    // Neither a plain GET (426) nor a failed handshake (400) keeps the slot it took.
    for (let i = 0; i < 6; i++) expect((await server.app.inject({ method: 'GET', url: '/ws/echo' })).statusCode).toBe(426);
    for (let i = 0; i < 6; i++) expect(await badHandshake()).toBe('HTTP/1.1 400 Bad Request');
    const first = await openTogether(8);
    expect(first.opened).toHaveLength(5);
    expect(first.refused).toEqual(Array(3).fill('Unexpected server response: 503'));
    await expect(server.app.injectWS('/ws/echo')).rejects.toThrow('Unexpected server response: 503');
    for (const ws of first.opened) ws.terminate();
    await expect.poll(async () => {
      const again = await openTogether(5);
      for (const ws of again.opened) ws.terminate();
      return again.opened.length;
    }).toBe(5);
    // The sessions end on the instances after the clients go; the next test needs a free slot.
    await expect.poll(async () => (await server.app.inject({ method: 'GET', url: '/ws/echo' })).statusCode).toBe(426);
  });

  it('keeps reading past INPUT_WINDOW_BYTES of frames that each arrive in two TCP writes, and frees the connection', async () => {
    // A frame split across reads is reassembled into a buffer of its own, which is transferred to
    // the instance's thread: the window must count the bytes it read, not what is left after.
    const frames = 12;
    const frameBytes = 512 * 1024;
    expect(frames * frameBytes).toBeGreaterThan(INPUT_WINDOW_BYTES);
    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    let answer = Buffer.alloc(0);
    // The echoes are megabytes of 7s; the JSON replies are at the end.
    socket.on('data', (chunk: Buffer) => (answer = Buffer.concat([answer, chunk]).subarray(-4096)));
    const write = (bytes: Buffer): Promise<void> => new Promise((resolve, reject) => socket.write(bytes, (err) => (err ? reject(err) : resolve())));
    const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    await write(Buffer.from('GET /ws/bulk-echo?name=split HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'));
    // Generous waits: on a loaded machine the session's start and end on the worker thread can take seconds.
    await expect.poll(() => answer.toString('latin1'), { timeout: 20_000 }).toContain('"hello"');
    // Client frames are masked (RFC 6455 section 5.3); a zero key leaves the payload as it is.
    const header = Buffer.alloc(14);
    header[0] = 0x82;
    header[1] = 0x80 | 127;
    header.writeBigUInt64BE(BigInt(frameBytes), 2);
    const payload = Buffer.alloc(frameBytes, 7);
    for (let i = 0; i < frames; i++) {
      await write(Buffer.concat([header, payload.subarray(0, frameBytes / 2)]));
      await pause();
      await write(payload.subarray(frameBytes / 2));
      await pause();
    }
    const last = Buffer.from(JSON.stringify({ op: 'echo', text: 'after the window' }));
    await write(Buffer.concat([Buffer.from([0x81, 0x80 | last.length, 0, 0, 0, 0]), last]));
    await expect.poll(() => answer.toString('latin1').slice(-200), { timeout: 20_000 }).toContain(`"text":"after the window","count":${frames + 1}`);
    socket.destroy();
    await expect.poll(journalLines, { timeout: 20_000 }).toContain(`closed split after ${frames + 1}`);
  }, 60_000);

  it('answers a plain GET with 426 Upgrade Required', async () => {
    const res = await server.app.inject({ method: 'GET', url: '/ws/echo' });
    expect(res.statusCode).toBe(426);
    expect(res.json()).toEqual({ error: '/ws/echo is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket).', code: 'SF_ERR_UPGRADE_REQUIRED' });
  });

  it('lists the endpoint in OpenAPI as a GET upgrade route with its message schemas', async () => {
    const doc = (await server.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const op = doc.paths['/ws/echo'].get;
    expect(op.summary).toBe('Echo with a per-connection count');
    expect(Object.keys(op.responses)).toEqual(['101', '426', '503']);
    expect(op['x-websocket']).toEqual({
      messages: { client: { $ref: '#/components/schemas/EchoMessage' }, server: { $ref: '#/components/schemas/EchoReply' } },
    });
    expect(doc.components.schemas.EchoMessage.properties.op).toEqual({ type: 'string', enum: ['echo', 'refuse', 'break'] });
  });
});

describe('shutting down with WebSocket connections open', () => {
  it('ends each session\'s input, sends what the model still yields, closes with 1001 and refuses new upgrades', async () => {
    const moduleUrl = new URL('../fixtures/models/socket-model.ts', import.meta.url).href;
    const draining = new ServeFnServer({ models: [SocketModel], moduleUrl, logger: false, collectProcessMetrics: false });
    await draining.start();
    const url = (await draining.app.listen({ port: 0, host: '127.0.0.1' })).replace('http', 'ws');
    const ws = new WebSocket(`${url}/ws/echo?name=drained`);
    const messages: unknown[] = [];
    ws.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString())));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    await expect.poll(() => messages.length).toBe(1);
    ws.send(JSON.stringify({ op: 'echo', text: 'last words' }));
    await expect.poll(() => messages.length).toBe(2);
    const stopping = draining.close();
    expect(await closed).toEqual({ code: 1001, reason: 'server shutting down' });
    expect(messages.slice(1)).toEqual([{ text: 'last words', count: 1, instance: expect.any(Number) }, { bye: 1 }]);
    await stopping;
    expect(journalLines()).toContain('closed drained after 1');
  });

  it('cancels a session and a streamed response that do not end within streamTimeoutMs, then finalizes', async () => {
    const moduleUrl = new URL('../fixtures/models/socket-model.ts', import.meta.url).href;
    const stubborn = new ServeFnServer({ models: [SocketModel], moduleUrl, logger: false, collectProcessMetrics: false });
    await stubborn.start();
    const http = await stubborn.app.listen({ port: 0, host: '127.0.0.1' });
    const ws = new WebSocket(`${http.replace('http', 'ws')}/ws/ticks?name=stubborn`);
    const ticks: unknown[] = [];
    ws.on('message', (data: Buffer) => ticks.push(JSON.parse(data.toString())));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    const response = await fetch(`${http}/ticks`);
    const reader = response.body!.getReader();
    await reader.read();
    await expect.poll(() => ticks.length).toBeGreaterThan(1);
    const started = Date.now();
    await stubborn.close({ streamTimeoutMs: 300 });
    const tookMs = Date.now() - started;
    expect(tookMs).toBeGreaterThanOrEqual(300);
    expect(tookMs).toBeLessThan(5_000);
    expect(await closed).toEqual({ code: 1001, reason: 'server shutting down' });
    expect(journalLines()).toEqual(expect.arrayContaining(['ticks stubborn stopped', 'http ticks stopped']));
    await reader.cancel().catch(() => undefined);
  });
});

class Word {
  @IsString() word!: string;
}

@Model({ name: 'inline-sockets' })
@Instances(1, { inline: true })
class InlineShouter {
  @WebSocketEndpoint('/ws/shout', { message: Word })
  async *shout(messages: AsyncIterable<Word>): AsyncGenerator<object> {
    for await (const m of messages) yield { shout: m instanceof Word ? m.word.toUpperCase() : 'not a Word' };
  }
}

describe('a @WebSocketEndpoint on an inline instance', () => {
  it('runs the session on the HTTP thread with the same validation and conversion', async () => {
    const inline = new ServeFnServer({ models: [InlineShouter], logger: false, collectProcessMetrics: false });
    await inline.start();
    const url = (await inline.app.listen({ port: 0, host: '127.0.0.1' })).replace('http', 'ws');
    const ws = new WebSocket(`${url}/ws/shout`);
    const replies: unknown[] = [];
    ws.on('message', (data: Buffer) => replies.push(JSON.parse(data.toString())));
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ word: 'hey' }));
    ws.send(JSON.stringify({ word: 3 }));
    await expect.poll(() => replies.length).toBe(2);
    // The error answer comes from the HTTP thread at once, so it may overtake the model's reply.
    expect(replies).toEqual(expect.arrayContaining([{ shout: 'HEY' }, expect.objectContaining({ code: 'SF_ERR_MESSAGE_INVALID' })]));
    ws.close();
    await inline.close();
  });

  it('leaves no socket in its closing handshake once the server has closed, so nothing holds the process open', async () => {
    const inline = new ServeFnServer({ models: [InlineShouter], logger: false, collectProcessMetrics: false });
    await inline.start();
    // injectWS's in-memory socket never closes its side: ws would wait 30 s for it (its closeTimeout).
    const ws = await inline.app.injectWS('/ws/shout');
    const reply = new Promise((resolve) => ws.once('message', resolve));
    ws.send(JSON.stringify({ word: 'bye' }));
    await reply;
    ws.close();
    const serverSide = [...inline.app.websocketServer.clients];
    expect(serverSide).toHaveLength(1);
    await expect.poll(() => serverSide[0]!.readyState).toBe(WebSocket.CLOSING);
    await inline.close();
    await expect.poll(() => [serverSide[0]!.readyState, ws.readyState]).toEqual([WebSocket.CLOSED, WebSocket.CLOSED]);
  });
});
