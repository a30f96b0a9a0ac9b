import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT, startCli, type RunningCli } from './cli-harness.js';

const GRACE_PERIOD_MS = 30_000;

/**
 * A WebSocket client written by hand on a TCP socket, so it can do what no well-behaved library
 * does: never answer the close handshake, or stop reading altogether.
 */
async function rawWebSocket(port: number, path: string): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(
    [`GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Upgrade: websocket', 'Connection: Upgrade', `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`, 'Sec-WebSocket-Version: 13', '', ''].join('\r\n'),
  );
  await new Promise<void>((resolve, reject) => {
    let head = '';
    const onData = (chunk: Buffer): void => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (head.startsWith('HTTP/1.1 101')) resolve();
      else reject(new Error(`upgrade refused: ${head}`));
    };
    socket.on('data', onData);
  });
  return socket;
}

/** One masked client frame (RFC 6455 §5.2); the all-zero mask leaves the payload as it is. */
function clientFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  const length = payload.byteLength;
  const head = length < 126 ? Buffer.from([0, 0x80 | length]) : Buffer.alloc(10);
  if (length >= 126) {
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(length), 2);
  }
  head[0] = (fin ? 0x80 : 0) | opcode;
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

const BINARY = 0x2;

/** Resolves once `socket` has had data waiting to be written, unchanged, for a while: the server stopped reading it. */
async function untilWritesStall(socket: Socket): Promise<void> {
  let last = -1;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const pending = socket.writableLength;
    if (pending > 0 && pending === last) return;
    last = pending;
  }
}

async function sigtermAndTime(cli: RunningCli): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  cli.proc.kill('SIGTERM');
  const code = await cli.waitForExit(GRACE_PERIOD_MS + 10_000);
  return { code, ms: Date.now() - started };
}

/**
 * SIGTERM with WebSocket clients that never complete the close handshake: the drain closes them
 * with 1001, drops those that do not answer within a few seconds, and the process exits 0 long
 * before the grace period, instead of waiting it out and exiting 1.
 */
describe('serve-fn start drains WebSocket peers that go silent', () => {
  const clients: Socket[] = [];
  afterEach(() => {
    for (const socket of clients.splice(0)) socket.destroy();
  });

  async function startSockets(): Promise<RunningCli> {
    const dir = join(REPO_ROOT, 'test', '.tmp', `silent-peers-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const cli = await startCli(
      ['start', 'test/fixtures/models/socket-model.ts', '--host', '127.0.0.1', '--grace-period', String(GRACE_PERIOD_MS), '--shutdown-delay', '0'],
      { SERVE_FN_TEST_JOURNAL: join(dir, `journal-${Date.now()}.txt`) },
    );
    await cli.waitForOutput(/serve-fn ready/, 30_000);
    return cli;
  }

  it('drops a peer that reads but never answers the 1001 close frame, and exits 0', async () => {
    const cli = await startSockets();
    const socket = await rawWebSocket(cli.port, '/ws/bulk-echo');
    clients.push(socket);
    // 4.6 MiB of a message split into frames that never ends, then silence: it reads, but answers nothing.
    for (let i = 0; i < 5; i++) socket.write(clientFrame(i === 0 ? BINARY : 0, Buffer.alloc(920 * 1024), false));
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const { code, ms } = await sigtermAndTime(cli);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(GRACE_PERIOD_MS / 2);
    // It was sent the goodbye and the close frame (opcode 0x8, code 1001) before it was dropped.
    const wire = Buffer.concat(received);
    const close = wire.lastIndexOf(Buffer.from([0x88]));
    expect(close).toBeGreaterThanOrEqual(0);
    expect(wire.readUInt16BE(close + 2)).toBe(1001);
  }, GRACE_PERIOD_MS + 30_000);

  it('drops a peer that stopped reading, whose 1001 close frame cannot even be written, and exits 0', async () => {
    const cli = await startSockets();
    const socket = await rawWebSocket(cli.port, '/ws/bulk-echo');
    clients.push(socket);
    socket.pause();
    // Echoed back to a client that reads nothing: more than both ends' socket buffers hold.
    for (let i = 0; i < 48; i++) socket.write(clientFrame(BINARY, Buffer.alloc(1024 * 1024, i)));
    await untilWritesStall(socket);
    const { code, ms } = await sigtermAndTime(cli);
    expect(code).toBe(0);
    expect(ms).toBeLessThan(GRACE_PERIOD_MS / 2);
  }, GRACE_PERIOD_MS + 60_000);
});
