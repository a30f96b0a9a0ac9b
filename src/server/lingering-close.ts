import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/*
 * A refusal sent before the request's body has all arrived (413 for a body over the limit, most
 * often) must still reach a client that writes its whole body before it reads the answer (Python's
 * urllib and requests, Node's http.request). fastify answers such a refusal with `Connection:
 * close` and Node then closes the socket as soon as the answer is written: the client's next
 * writes meet a closed socket, it gets EPIPE or ECONNRESET, and never reads the 413.
 *
 * So the close lingers, as nginx's `lingering_close` does
 * (https://nginx.org/en/docs/http/ngx_http_core_module.html#lingering_close) and RFC 9112 §9.6
 * describes: the server half-closes (FIN after the answer), reads and discards what the client
 * still sends, and closes once the client closes its side, or a bound below is reached.
 * Hand-written: no library lingers on a Node socket.
 */

export interface LingeringBounds {
  /** The longest a closing connection is read after the answer. */
  readonly timeMs: number;
  /** The longest wait for the client's next bytes, or its close. */
  readonly timeoutMs: number;
  /** The most bytes read and discarded. */
  readonly maxBytes: number;
}

/**
 * nginx's defaults for the times (`lingering_time` 30 s, `lingering_timeout` 5 s). nginx has no byte
 * bound; this one is twice the largest default body limit (64 MiB, Triton's), so an honest client
 * that sent a body a few times too large still gets its answer, while one streaming without end
 * over a fast link is cut off instead of being read for the whole lingering time.
 */
export const LINGERING_BOUNDS: LingeringBounds = { timeMs: 30_000, timeoutMs: 5_000, maxBytes: 128 * 1024 * 1024 };

/**
 * Node's HTTP server closes the socket of a `Connection: close` answer, once it is written, with the
 * socket's `destroySoon()` (end, then destroy). That method is not in Node's documentation, so the
 * lingering close replaces it on one socket only, and test/unit/lingering-close.test.ts fails should
 * Node stop calling it.
 */
type ClosingSocket = Socket & { destroySoon(): void };

/** Every error answered before its request's body has all arrived closes its connection with a lingering close. */
export function installLingeringClose(app: FastifyInstance, bounds: LingeringBounds = LINGERING_BOUNDS): void {
  const lingering = new Set<Socket>();
  let closing = false;
  // onError, not onSend: only error answers are sent before the body is read, and this costs answers that succeed nothing.
  app.addHook('onError', (request, _reply, _error, done) => {
    if (!request.raw.complete && !closing) lingerOnClose(request.raw, bounds, lingering);
    done();
  });
  // A request pipelined behind the refused body arrives on a socket already closed for writing: its
  // answer could never be sent, so it is not run, and the client has had its answer (nginx discards
  // what follows a refused body too). The check is on the socket, so it costs other requests a property read.
  app.addHook('onRequest', (request, reply, done) => {
    // No socket: a request injected in-process (@fastify/websocket's injectWS).
    const socket = request.raw.socket as Socket | undefined;
    if (!socket?.writableEnded) return done();
    socket.destroy();
    // Ends the request's lifecycle here (https://fastify.dev/docs/latest/Reference/Reply/#hijack).
    reply.hijack();
  });
  // The server's close waits for every connection: one still lingering would hold the drain.
  app.addHook('preClose', (done) => {
    closing = true;
    for (const socket of lingering) socket.destroy();
    done();
  });
}

/**
 * If the answer to `request` closes the connection while its body is still arriving, the close
 * lingers. An answer that keeps the connection open needs nothing (Node reads the rest of the body
 * itself); the connection's next closing answer, its request complete, then closes as Node does.
 */
function lingerOnClose(request: IncomingMessage, bounds: LingeringBounds, lingering: Set<Socket>): void {
  const socket = request.socket as ClosingSocket | undefined;
  if (!socket || Object.hasOwn(socket, 'destroySoon')) return;
  socket.destroySoon = function lingeringDestroySoon(this: ClosingSocket): void {
    delete (this as Partial<ClosingSocket>).destroySoon;
    if (request.complete) return this.destroySoon();
    lingering.add(this);
    this.once('close', () => lingering.delete(this));
    linger(this, request, bounds);
  };
}

function linger(socket: Socket, request: IncomingMessage, bounds: LingeringBounds): void {
  const close = (): void => {
    socket.destroy();
  };
  // Half-closed: the client reads the answer, then end of stream, and may go on writing meanwhile.
  socket.end();
  const deadline = setTimeout(close, bounds.timeMs);
  // Node's HTTP parser refreshes the socket's timeout as bytes arrive, so this is the time between them.
  socket.setTimeout(bounds.timeoutMs, close);
  let discarded = 0;
  request.on('data', (chunk: Buffer) => {
    discarded += chunk.byteLength;
    if (discarded > bounds.maxBytes) close();
  });
  // A body parser that gave up may have paused the body (a multipart one unpipes it).
  request.resume();
  // The client's FIN: it has read the answer, or given up.
  socket.once('end', close);
  socket.once('close', () => clearTimeout(deadline));
}
