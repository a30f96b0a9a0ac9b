import { EventEmitter } from 'node:events';
import { Transform } from 'class-transformer';
import { IsInt } from 'class-validator';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SocketEndpointDefinition } from '../../src/definition/model-definition.js';
import { createError, serializeError } from '../../src/errors/index.js';
import { SocketLink } from '../../src/wire/socket-session.js';
import type { SocketInput } from '../../src/wire/wire-format.js';
import { CLOSE_TIMEOUT_MS, INPUT_WINDOW, INPUT_WINDOW_BYTES, SocketConnection } from '../../src/server/socket-connection.js';
import { settle } from '../helpers/settle.js';

class Count {
  @IsInt() n!: number;
}

class Exploding {
  @Transform(() => {
    throw new Error('transform exploded');
  })
  @IsInt()
  n!: number;
}

/** Just what SocketConnection uses of a ws WebSocket, recording what the server does. */
class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  paused = 0;
  resumed = 0;
  readonly sent: { data: unknown; binary: boolean }[] = [];
  closedWith?: { code: number; reason: string };
  terminated = 0;
  /** A peer that stopped reading: sends are queued, and their callbacks wait for `flush()`. */
  holdWrites = false;
  private readonly held: (() => void)[] = [];

  pause(): void {
    this.paused++;
  }
  resume(): void {
    this.resumed++;
  }
  send(data: unknown, options?: { binary?: boolean } | (() => void), cb?: () => void): void {
    const binary = typeof options === 'object' ? Boolean(options.binary) : false;
    this.sent.push({ data: typeof data === 'string' && !binary ? JSON.parse(data) : data, binary });
    const written = typeof options === 'function' ? options : cb;
    if (this.holdWrites && written) this.held.push(written);
    else written?.();
  }
  flush(): void {
    for (const written of this.held.splice(0)) written();
  }
  terminate(): void {
    this.terminated++;
    this.readyState = 3;
    this.emit('close');
  }
  close(code: number, reason: string): void {
    this.closedWith = { code, reason };
    this.readyState = 3;
  }
}

function endpoint(overrides: Partial<SocketEndpointDefinition> = {}): SocketEndpointDefinition {
  return { id: 'M.talk', methodName: 'talk', path: '/ws', idleTimeoutMs: 1000, maxConnections: 10, tags: [], ...overrides };
}

const log = { debug: () => undefined, error: () => undefined } as unknown as FastifyBaseLogger;

function connect(options: { endpoint?: SocketEndpointDefinition; draining?: boolean | (() => boolean); transfer?: boolean; holdWrites?: boolean } = {}) {
  const socket = new FakeSocket();
  socket.holdWrites = options.holdWrites ?? false;
  const draining = typeof options.draining === 'function' ? options.draining : () => Boolean(options.draining);
  const delivered: SocketInput[] = [];
  const controlLog: string[] = [];
  const link = new SocketLink(
    {
      deliver: (input) => {
        // As a worker instance's postMessage does with a buffer the view covers whole: it is emptied here.
        if (options.transfer && input.kind === 'binary') structuredClone(input.value.buffer, { transfer: [input.value.buffer as ArrayBuffer] });
        delivered.push(input);
      },
      endInput: () => controlLog.push('end-input'),
      grant: () => undefined,
      cancel: () => controlLog.push('cancel'),
    },
    0,
  );
  const connection = new SocketConnection(socket as unknown as WebSocket, link, options.endpoint ?? endpoint(), 'm', log, draining);
  const running = connection.run();
  return { socket, link, delivered, controlLog, running };
}


afterEach(() => {
  vi.useRealTimers();
});

describe('SocketConnection input', () => {
  it('hands text, validated JSON and binary messages to the session in arrival order', async () => {
    const { socket, delivered, link } = connect({ endpoint: endpoint({ message: Count }) });
    socket.emit('message', Buffer.from('{"n": 1}'), false);
    socket.emit('message', Buffer.from([9, 8]), true);
    socket.emit('message', Buffer.from('{"n": 2}'), false);
    await settle();
    expect(delivered.map((d) => d.kind)).toEqual(['json', 'binary', 'json']);
    const values = delivered.map((d) => ('value' in d ? d.value : undefined));
    expect(values[0]).toBeInstanceOf(Count);
    expect({ ...(values[0] as Count) }).toEqual({ n: 1 });
    expect(values[1]).toEqual(new Uint8Array([9, 8]));
    expect({ ...(values[2] as Count) }).toEqual({ n: 2 });
    link.close();
  });

  it('passes text as a string when the endpoint has no message DTO', async () => {
    const { socket, delivered, link } = connect();
    socket.emit('message', Buffer.from('plain words'), false);
    await settle();
    expect(delivered).toEqual([{ kind: 'text', value: 'plain words' }]);
    link.close();
  });

  it('answers invalid JSON and invalid messages with error messages in their turn and does not pass them on', async () => {
    const { socket, delivered, link } = connect({ endpoint: endpoint({ message: Count }) });
    socket.emit('message', Buffer.from('{"n":'), false);
    socket.emit('message', Buffer.from('{"n": "three"}'), false);
    await settle();
    expect(delivered).toEqual([{ kind: 'refused' }, { kind: 'refused' }]);
    expect(socket.sent).toEqual([]);
    link.taken(2);
    await settle();
    expect(socket.sent[0].data).toMatchObject({ code: 'SF_ERR_MESSAGE_INVALID_JSON' });
    expect(socket.sent[1].data).toEqual({
      error: 'Message failed validation: message.n: n must be an integer number',
      code: 'SF_ERR_MESSAGE_INVALID',
      detail: [{ loc: ['message', 'n'], msg: 'n must be an integer number', type: 'isInt', input: 'three' }],
    });
    expect(socket.closedWith).toBeUndefined();
    link.close();
  });

  it('answers a JSON message nested deeper than the JSON limit with SF_ERR_BODY_TOO_DEEP, and keeps the connection', async () => {
    const { socket, delivered, link } = connect({ endpoint: endpoint({ message: Count }) });
    socket.emit('message', Buffer.from(`{"n":${'['.repeat(10_000)}${']'.repeat(10_000)}}`), false);
    socket.emit('message', Buffer.from('{"n": 3}'), false);
    await settle();
    link.taken(1);
    await settle();
    expect(socket.sent.map((s) => s.data)).toEqual([{ error: 'Request body nests arrays and objects deeper than 128 levels.', code: 'SF_ERR_BODY_TOO_DEEP' }]);
    expect(delivered).toEqual([{ kind: 'refused' }, { kind: 'json', value: Object.assign(new Count(), { n: 3 }) }]);
    expect(socket.closedWith).toBeUndefined();
    link.close();
  });

  it(`stops reading after ${INPUT_WINDOW} messages the session has not taken, and reads again once half are taken`, async () => {
    const { socket, link } = connect();
    for (let i = 0; i < INPUT_WINDOW + 8; i++) socket.emit('message', Buffer.from(`m${i}`), false);
    await settle();
    expect(socket.paused).toBe(1);
    expect(link.pendingInput).toBe(INPUT_WINDOW + 8);
    link.taken(INPUT_WINDOW / 2 + 7);
    expect(socket.resumed).toBe(0);
    link.taken(1);
    expect(socket.resumed).toBe(1);
    link.close();
  });
});

describe('SocketConnection input limits and failures', () => {
  it(`stops reading past ${INPUT_WINDOW_BYTES} bytes the session has not taken, even with few messages`, async () => {
    const { socket, link } = connect();
    const big = Buffer.alloc(INPUT_WINDOW_BYTES / 2 + 1);
    socket.emit('message', big, true);
    expect(socket.paused).toBe(0);
    socket.emit('message', big, true);
    expect(socket.paused).toBe(1);
    await settle();
    expect([link.pendingInput, link.pendingBytes]).toEqual([2, 2 * big.byteLength]);
    link.taken(1);
    expect(socket.resumed).toBe(0);
    link.taken(1);
    expect(socket.resumed).toBe(1);
    link.close();
  });

  it('reads again once the session takes binary messages that were transferred to its thread (emptied here)', async () => {
    const { socket, link } = connect({ transfer: true });
    const big = (): Buffer => Buffer.from(new ArrayBuffer(INPUT_WINDOW_BYTES / 2 + 1));
    socket.emit('message', big(), true);
    socket.emit('message', big(), true);
    expect(socket.paused).toBe(1);
    await settle();
    link.taken(2);
    expect([link.pendingInput, link.pendingBytes, socket.resumed]).toEqual([0, 0, 1]);
    socket.emit('message', big(), true);
    await settle();
    link.taken(1);
    expect(socket.paused).toBe(1);
    link.close();
  });

  it('fails the connection with 1011 when validating a message throws, instead of dropping every later message', async () => {
    const { socket, delivered, running } = connect({ endpoint: endpoint({ message: Exploding }) });
    socket.emit('message', Buffer.from('{"n": 1}'), false);
    socket.emit('message', Buffer.from('{"n": 2}'), false);
    await running;
    expect(delivered).toEqual([]);
    expect(socket.sent[0].data).toEqual({ error: "Model 'm' failed in M.talk: transform exploded", code: 'SF_ERR_EXECUTION_FAILED' });
    expect(socket.closedWith).toEqual({ code: 1011, reason: "Model 'm' failed in M.talk: transform exploded" });
  });

  it('does not call a connection idle while the session has not taken what the client sent', async () => {
    vi.useFakeTimers();
    const { socket, link, running } = connect();
    socket.emit('message', Buffer.from('one'), false);
    await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(3000);
    expect(socket.closedWith).toBeUndefined();
    link.taken(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(socket.closedWith).toEqual({ code: 1001, reason: 'Connection closed after 1000 ms without a message from the client.' });
    vi.useRealTimers();
    await running;
  });
});

describe('SocketConnection output and closing', () => {
  it('sends objects as JSON text, strings as text and bytes as binary, then closes with 1000', async () => {
    const { socket, link, running } = connect();
    link.output.push({ kind: 'chunk', value: { a: 1 } });
    link.output.push({ kind: 'chunk', value: new Uint8Array([1, 2]) });
    link.output.push({ kind: 'end' });
    await running;
    expect(socket.sent).toEqual([
      { data: { a: 1 }, binary: false },
      { data: new Uint8Array([1, 2]), binary: true },
    ]);
    expect(socket.closedWith).toEqual({ code: 1000, reason: '' });
  });

  it('closes with 1001 when the session ends because the server drains', async () => {
    const { socket, link, running } = connect({ draining: true });
    link.output.push({ kind: 'end' });
    await running;
    expect(socket.closedWith).toEqual({ code: 1001, reason: 'server shutting down' });
  });

  it('sends a 4xx failure as a message and closes with 1008, its reason cut to 123 bytes', async () => {
    const { socket, link, running, controlLog } = connect();
    const message = `bad audio: ${'é'.repeat(100)}`;
    link.output.push({ kind: 'error', error: serializeError(createError('SF_ERR_BAD_REQUEST', message)) });
    await running;
    expect(socket.sent).toEqual([{ data: { error: message, code: 'SF_ERR_BAD_REQUEST' }, binary: false }]);
    expect(socket.closedWith!.code).toBe(1008);
    expect(Buffer.byteLength(socket.closedWith!.reason)).toBeLessThanOrEqual(123);
    expect(socket.closedWith!.reason).toMatch(/^bad audio: é+\.\.\.$/);
    // The session has already stopped producing, so only its input is ended.
    expect(controlLog).toEqual(['end-input']);
  });

  it('closes with 1011 when the session fails with a server error', async () => {
    const { socket, link, running } = connect();
    link.output.push({ kind: 'error', error: serializeError(new Error('kaput')) });
    await running;
    expect(socket.sent[0].data).toEqual({ error: "Model 'm' failed in M.talk: kaput", code: 'SF_ERR_EXECUTION_FAILED' });
    expect(socket.closedWith).toEqual({ code: 1011, reason: "Model 'm' failed in M.talk: kaput" });
  });

  it('closes an idle connection with 1001 after idleTimeoutMs, counting from the last client message', async () => {
    vi.useFakeTimers();
    const { socket, link, controlLog, running } = connect();
    await vi.advanceTimersByTimeAsync(900);
    socket.emit('message', Buffer.from('still here'), false);
    await vi.advanceTimersByTimeAsync(0);
    link.taken(1);
    await vi.advanceTimersByTimeAsync(900);
    expect(socket.closedWith).toBeUndefined();
    await vi.advanceTimersByTimeAsync(100);
    expect(socket.sent.at(-1)!.data).toEqual({ error: 'Connection closed after 1000 ms without a message from the client.', code: 'SF_ERR_SOCKET_IDLE' });
    expect(socket.closedWith).toEqual({ code: 1001, reason: 'Connection closed after 1000 ms without a message from the client.' });
    expect(controlLog).toEqual(['end-input', 'cancel']);
    vi.useRealTimers();
    await running;
  });

  it(`drops a peer that takes none of what is written for ${CLOSE_TIMEOUT_MS} ms once the server drains, and not before`, async () => {
    vi.useFakeTimers();
    let draining = false;
    const { socket, link, controlLog, running } = connect({ holdWrites: true, draining: () => draining, endpoint: endpoint({ idleTimeoutMs: 600_000 }) });
    link.output.push({ kind: 'chunk', value: { tick: 1 } });
    await vi.advanceTimersByTimeAsync(10 * CLOSE_TIMEOUT_MS);
    // Backpressure while the server runs: the session waits for the peer.
    expect(socket.terminated).toBe(0);
    draining = true;
    await vi.advanceTimersByTimeAsync(CLOSE_TIMEOUT_MS);
    expect(socket.terminated).toBe(1);
    expect(controlLog).toEqual(['end-input', 'cancel']);
    socket.flush();
    vi.useRealTimers();
    await running;
  });

  it('keeps a slow peer that still takes what is written while the server drains', async () => {
    vi.useFakeTimers();
    const { socket, link, running } = connect({ holdWrites: true, draining: true, endpoint: endpoint({ idleTimeoutMs: 600_000 }) });
    for (let i = 0; i < 4; i++) {
      link.output.push({ kind: 'chunk', value: { tick: i } });
      await vi.advanceTimersByTimeAsync(CLOSE_TIMEOUT_MS - 1);
      socket.flush();
    }
    link.output.push({ kind: 'end' });
    await vi.advanceTimersByTimeAsync(3 * CLOSE_TIMEOUT_MS);
    expect(socket.terminated).toBe(0);
    expect(socket.closedWith).toEqual({ code: 1001, reason: 'server shutting down' });
    vi.useRealTimers();
    await running;
  });

  it('stops the session when the client goes away', async () => {
    const { socket, controlLog, running } = connect();
    socket.emit('close');
    await running;
    expect(controlLog).toEqual(['end-input', 'cancel']);
  });
});
