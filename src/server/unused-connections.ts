import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';

/*
 * A client may open a connection and send nothing on it: undici (Node's fetch, which the openai SDK
 * uses) opens a fresh one when a streamed request is aborted, and browsers open speculative ones.
 * Node's server.close() reaps idle keep-alive connections, but Node 20's closeIdleConnections()
 * skips a connection that has not begun a request (https://github.com/nodejs/node/issues/63452),
 * so fastify's close, and with it the server's drain, waited on such a socket until the client
 * dropped it. This closes them as Node's fix does (https://github.com/nodejs/node/pull/63470): no
 * answer is cut, and a request whose headers were still arriving would only have been refused with
 * fastify's 503 for a closing server. Hand-written: fastify leaves them to Node.
 */

/** Connections that have not begun a request are destroyed when the server closes. */
export function installUnusedConnectionClose(app: FastifyInstance): void {
  const server = app.server as Server;
  const unused = new Set<Socket>();
  const used = (socket: Socket): void => {
    unused.delete(socket);
  };
  // Over TLS, the socket a request arrives on is the TLS one, known once its handshake is done; a raw
  // socket still in its handshake is not tracked (and a request's socket never is one).
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => used(socket));
  });
  // A hook rather than the server's 'request' event, so that a WebSocket upgrade (which
  // @fastify/websocket routes through fastify) counts as a request too: its session is closed by its
  // own route. Not the 'upgrade' event: listening to it turns Node's handling of every Upgrade header on.
  app.addHook('onRequest', (request, _reply, done) => {
    // No socket: a request injected in-process.
    if (request.raw.socket) used(request.raw.socket);
    done();
  });
  // preClose runs just before fastify's server.close(), which stops accepting connections.
  app.addHook('preClose', (done) => {
    for (const socket of unused) socket.destroy();
    unused.clear();
    done();
  });
}
