import { connect, type Socket } from 'node:net';
import fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { installUnusedConnectionClose } from '../../src/server/unused-connections.js';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/**
 * A listening server (not inject: what is tested is the socket) whose /slow route answers once the
 * close has begun: a preClose hook added after the one under test releases it.
 */
async function listening(): Promise<{ port: number; entered: Promise<void> }> {
  const server = fastify({ forceCloseConnections: 'idle' });
  app = server;
  installUnusedConnectionClose(server);
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  server.addHook('preClose', (done) => {
    release();
    done();
  });
  let entered!: () => void;
  const enteredRoute = new Promise<void>((resolve) => (entered = resolve));
  server.get('/slow', async () => {
    entered();
    await released;
    return { done: true };
  });
  await server.listen({ port: 0, host: '127.0.0.1' });
  return { port: (server.server.address() as { port: number }).port, entered: enteredRoute };
}

async function rawSocket(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  const socket = connect({ port, host: '127.0.0.1' });
  socket.on('error', () => undefined);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, received: () => text, closed };
}

/** Resolves with what `promise` resolved with, or 'timed out' after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe('installUnusedConnectionClose', () => {
  it('a connection that has sent nothing does not hold the close: it is closed', async () => {
    const { port } = await listening();
    const silent = await rawSocket(port);
    // The server has accepted it once a request on another connection is answered after it.
    const probe = await rawSocket(port);
    probe.socket.write('GET /missing HTTP/1.1\r\nHost: x\r\n\r\n');
    await expect.poll(() => probe.received()).toMatch(/^HTTP\/1.1 404/);
    const closing = app!.close();
    app = undefined;
    expect(await within(closing, 10_000)).toBeUndefined();
    expect(await within(silent.closed, 10_000)).toBeUndefined();
  });

  it('a request in flight when the close begins still gets its answer', async () => {
    const { port, entered } = await listening();
    const client = await rawSocket(port);
    // Connection: close, as ServeFnServer's answers say while it drains: Node's close() does not come back for a keep-alive socket.
    client.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await entered;
    const closing = app!.close();
    app = undefined;
    expect(await within(closing, 10_000)).toBeUndefined();
    await expect.poll(() => client.received()).toMatch(/^HTTP\/1.1 200[\s\S]*\{"done":true\}/);
  });
});
