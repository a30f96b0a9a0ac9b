import { connect, type Socket } from 'node:net';
import fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { installLingeringClose, LINGERING_BOUNDS, type LingeringBounds } from '../../src/server/lingering-close.js';

const LIMIT = 1024;

interface Listening {
  readonly app: FastifyInstance;
  readonly port: number;
  /** Resolves when the server's end of its first connection has closed. */
  readonly closed: Promise<void>;
}

/** Requests the test server's routes ran. */
const ran: string[] = [];

/** A listening server (not inject: what is tested is the socket) whose JSON route takes 1 KiB. */
async function listening(bounds?: LingeringBounds): Promise<Listening> {
  const app = fastify({ bodyLimit: LIMIT });
  installLingeringClose(app, bounds);
  app.post('/echo', async (request) => request.body);
  app.get('/hello', async () => {
    ran.push('GET /hello');
    return { hello: 'world' };
  });
  const closed = new Promise<void>((resolve) => app.server.once('connection', (socket: Socket) => socket.once('close', () => resolve())));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: (app.server.address() as { port: number }).port, closed };
}

/** A raw client that sends headers for a body larger than the limit, then as much of it as the test wants. */
async function rawUpload(port: number): Promise<{ socket: Socket; answer: Promise<string>; ended: Promise<void> }> {
  // Half-open allowed: a client's own end of the connection stays writable after the server's FIN.
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.on('error', () => undefined);
  let text = '';
  const answer = new Promise<string>((resolve) =>
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (text.includes('}')) resolve(text);
    }),
  );
  const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
  socket.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
  return { socket, answer, ended };
}

function chunk(bytes: number): string {
  return `${bytes.toString(16)}\r\n${' '.repeat(bytes)}\r\n`;
}

describe('lingering close after an answer sent before the body arrived', () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('half-closes after the answer and reads what the client still sends, until the client closes', async () => {
    const server = await listening();
    app = server.app;
    const { socket, answer, ended } = await rawUpload(server.port);
    socket.write(chunk(4 * LIMIT));
    expect(await answer).toMatch(/^HTTP\/1\.1 413 [^]*\r\nconnection: close\r\n/i);
    await ended;
    // The server's side is closed for writing, but still reads: these writes are not refused.
    const clientClosed = new Promise((resolve) => socket.once('close', resolve));
    for (let i = 0; i < 20; i++) socket.write(chunk(64 * 1024));
    await new Promise((resolve) => socket.write('0\r\n\r\n', resolve));
    socket.end();
    await Promise.all([server.closed, clientClosed]);
    expect(socket.errored).toBeNull();
  });

  it('does not run a request pipelined behind the refused body, whose answer could not be sent', async () => {
    const server = await listening();
    app = server.app;
    const { socket, answer } = await rawUpload(server.port);
    socket.write(chunk(4 * LIMIT));
    await answer;
    socket.write(`${chunk(LIMIT)}0\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n`);
    await server.closed;
    socket.destroy();
    expect(ran).toEqual([]);
    // The same request on a connection of its own runs.
    expect(await (await fetch(`http://127.0.0.1:${server.port}/hello`)).json()).toEqual({ hello: 'world' });
    expect(ran).toEqual(['GET /hello']);
  });

  it('closes a client that goes quiet for the lingering timeout', async () => {
    const server = await listening({ ...LINGERING_BOUNDS, timeoutMs: 200 });
    app = server.app;
    const { socket, answer } = await rawUpload(server.port);
    socket.write(chunk(4 * LIMIT));
    await answer;
    await server.closed;
    socket.destroy();
  });

  it('closes a client that keeps trickling bytes once the lingering time is over', async () => {
    const server = await listening({ ...LINGERING_BOUNDS, timeMs: 500, timeoutMs: 60_000 });
    app = server.app;
    const { socket, answer } = await rawUpload(server.port);
    socket.write(chunk(4 * LIMIT));
    await answer;
    let trickled = 0;
    const trickle = setInterval(() => socket.write(chunk(10), (err) => void (err || trickled++)), 50);
    await server.closed;
    clearInterval(trickle);
    // It was read for a while (about ten writes in 500 ms), not closed at the answer.
    expect(trickled).toBeGreaterThan(2);
    socket.destroy();
  });

  it('closes a client that sends more than the byte bound', async () => {
    const server = await listening({ ...LINGERING_BOUNDS, maxBytes: 1024 * 1024 });
    app = server.app;
    const { socket, answer } = await rawUpload(server.port);
    socket.write(chunk(4 * LIMIT));
    await answer;
    let sent = 0;
    const flood = setInterval(() => {
      for (let i = 0; i < 4; i++) socket.write(chunk(64 * 1024));
      sent += 4 * 64 * 1024;
    }, 5);
    await server.closed;
    clearInterval(flood);
    socket.destroy();
    expect(sent).toBeGreaterThan(1024 * 1024);
  });

  it('does not hold the server close for a connection still lingering', async () => {
    const server = await listening({ ...LINGERING_BOUNDS, timeMs: 600_000, timeoutMs: 600_000 });
    const { socket, answer } = await rawUpload(server.port);
    socket.write(chunk(4 * LIMIT));
    await answer;
    await server.app.close();
    await server.closed;
    socket.destroy();
  });
});
