import { DEV_CLIENT_HEADER } from '../server/restricted-apis.js';
import { Agent, createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';

/** A server `serve-fn dev` runs, on a loopback port of its own, and the requests forwarded to it. */
export class DevUpstream {
  /** Its own keep-alive pool, so a retired server's sockets are closed with it and never reused. */
  readonly agent = new Agent({ keepAlive: true });
  #inFlight = 0;
  #settled: (() => void) | undefined;

  constructor(readonly port: number) {}

  begin(): void {
    this.#inFlight++;
  }

  end(): void {
    if (--this.#inFlight === 0) this.#settled?.();
  }

  /**
   * Resolves once every request forwarded to it has its answer: asked of a server no longer
   * forwarded to, before it is stopped, so that stopping it (which closes its listener and its idle
   * connections) cannot meet a request still on its way there.
   */
  settled(): Promise<void> {
    return this.#inFlight === 0 ? Promise.resolve() : new Promise((resolve) => (this.#settled = resolve));
  }
}

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection: each side of the forwarder
 * writes its own. `upgrade` is kept for WebSocket handshakes, which are forwarded raw.
 */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'proxy-authorization', 'proxy-authenticate']);

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const connectionTokens = String(headers.connection ?? '').toLowerCase().split(',').map((t) => t.trim());
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name) && (name === 'upgrade' || !connectionTokens.includes(name))));
}

/** Every response `dev` writes itself (no server, server gone) takes KServe v2's and TEI's `{ error }` shape. */
function answerError(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '1' });
  res.end(JSON.stringify({ error: message }));
}

/**
 * The port `serve-fn dev` holds for the user: it forwards each request, and each WebSocket, to the
 * server `current()` names at the moment it arrives. A reload starts the next server beside the
 * previous one and switches only once the next one listens, so no request meets a closed port, as
 * uvicorn's `--reload` (which restarts in place) lets them. Requests already forwarded finish on the
 * server they went to: it drains them before it exits. Forwarding per request, not per connection,
 * is what lets a client's keep-alive connection see the new version at once.
 *
 * The server behind sees every connection come from 127.0.0.1, so each forwarded request names its
 * client in {@link DEV_CLIENT_HEADER} (replacing any the client sent): the server's loopback-only APIs
 * (shared memory, the repository API) then answer only clients that are themselves on loopback.
 */
export function devProxy(current: () => DevUpstream | undefined): Server {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const upstream = current();
    if (!upstream) return answerError(res, 503, 'serve-fn dev: no server is running; fix the error above and save to reload');
    upstream.begin();
    const forwarded = request(
      { host: '127.0.0.1', port: upstream.port, method: req.method, path: req.url, headers: { ...endToEnd(req.headers), [DEV_CLIENT_HEADER]: req.socket.remoteAddress ?? '' }, agent: upstream.agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
        // Each chunk is written as it comes, so server-sent events and NDJSON streams stay streams.
        answer.on('error', () => res.destroy());
        answer.pipe(res);
      },
    );
    forwarded.on('error', (err) => answerError(res, 502, `serve-fn dev: the server did not answer (${err.message})`));
    // A client that goes away cancels the request on the server too (its disconnect signal).
    res.on('close', () => {
      if (!res.writableFinished) forwarded.destroy();
      upstream.end();
    });
    req.pipe(forwarded);
  });

  server.on('upgrade', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const upstream = current();
    if (!upstream) return void client.end('HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    const socket = connect(upstream.port, '127.0.0.1', () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        if (req.rawHeaders[i].toLowerCase() !== DEV_CLIENT_HEADER) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      }
      lines.push(`${DEV_CLIENT_HEADER}: ${req.socket.remoteAddress ?? ''}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) socket.write(head);
      socket.pipe(client).pipe(socket);
    });
    socket.on('error', () => client.destroy());
    client.on('error', () => socket.destroy());
    socket.on('close', () => client.destroy());
    client.on('close', () => socket.destroy());
  });
  return server;
}
