import { requestTrace, requestUpgraded } from '../tracing/request-tracing.js';
import type { TraceSettings } from '../tracing/trace-settings.js';
import websocket, { type WebsocketPluginOptions } from '@fastify/websocket';
import type { FastifyInstance, FastifyRequest, FastifySchema } from 'fastify';
import type { ModelDefinition, SocketEndpointDefinition } from '../definition/model-definition.js';
import { createError, statusOf } from '../errors/index.js';
import type { ModelRuntime } from '../inference/model-runtime.js';
import type { DtoSchemas } from './openapi-plugin.js';
import { schemaRef } from '../validation/dto-schema.js';
import { flattenHeaders } from './request-reader.js';
import type { ServerState } from './server-state.js';
import { CLOSE, CLOSE_TIMEOUT_MS, closeReason, INPUT_WINDOW, INPUT_WINDOW_BYTES, SocketConnection } from './socket-connection.js';

export interface SocketRoutesOptions {
  readonly runtimes: readonly ModelRuntime[];
  readonly state: ServerState;
  readonly schemas: DtoSchemas;
  /** Largest client message in bytes. */
  readonly maxPayload: number;
  /** Which sessions get their model's `session` span (Triton's trace settings). */
  readonly traceSettings?: TraceSettings;
}

/** Registers each model's @WebSocketEndpoint methods as WebSocket routes (GET with Upgrade). */
export async function socketRoutes(app: FastifyInstance, opts: SocketRoutesOptions): Promise<void> {
  const sockets = opts.runtimes.flatMap((runtime) => runtime.definition.sockets.map((endpoint) => ({ runtime, endpoint })));
  if (sockets.length === 0) return;
  // `closeTimeout` is ws's own (ws 8.19+, https://github.com/websockets/ws/blob/master/doc/ws.md); @types/ws does not declare it yet.
  const options: WebsocketPluginOptions['options'] & { closeTimeout: number } = { maxPayload: opts.maxPayload, closeTimeout: CLOSE_TIMEOUT_MS };
  await app.register(websocket, { options, preClose: endSessionsOnClose });
  for (const { runtime, endpoint } of sockets) registerSocket(app, runtime, endpoint, opts);
}

/**
 * Replaces @fastify/websocket's preClose, which only calls close() on each client. By the time the app
 * closes, ServeFnServer.close has drained every session, so what is left is sockets in their closing
 * handshake, waiting for the peer to close its side: ws then keeps a 30 s timer (its closeTimeout)
 * per socket, which holds the process open after close() returned; injectWS's in-memory sockets never
 * close their side, so a test run exited 30 s late. A server that is closing stops waiting: sessions
 * still open are told so (1001) and sockets already closing are destroyed.
 */
function endSessionsOnClose(this: FastifyInstance, done: () => void): void {
  for (const client of this.websocketServer.clients) {
    if (client.readyState === client.OPEN) client.close(CLOSE.goingAway, 'server shutting down');
    else client.terminate();
  }
  this.websocketServer.close();
  done();
}

function registerSocket(app: FastifyInstance, runtime: ModelRuntime, endpoint: SocketEndpointDefinition, opts: SocketRoutesOptions): void {
  let open = 0;
  /** Requests holding one of the `open` slots; a slot is given back once, by whichever ends first. */
  const holders = new WeakSet<FastifyRequest>();
  const releaseSlot = (request: FastifyRequest): void => {
    if (holders.delete(request)) open--;
  };
  app.route({
    method: 'GET',
    url: endpoint.path,
    schema: socketSchema(runtime.definition, endpoint, opts.schemas),
    validatorCompiler: () => () => true,
    // Runs before the upgrade, so a refusal is an ordinary HTTP answer the client can read.
    preValidation: async (request) => {
      if (!opts.state.ready) throw createError('SF_ERR_DRAINING');
      if (open >= endpoint.maxConnections) throw createError('SF_ERR_SOCKET_LIMIT', endpoint.path, open);
      // Taken here, not in wsHandler: upgrades that arrive together all pass this check before any
      // of them reaches wsHandler. Given back by the HTTP answer (426, or a refusal by a later hook),
      // by the upgrade's socket closing (a failed handshake, a closed connection), or by the session.
      open++;
      holders.add(request);
      if (request.ws) request.raw.socket?.once('close', () => releaseSlot(request));
    },
    onResponse: async (request) => releaseSlot(request),
    handler: async () => {
      throw createError('SF_ERR_UPGRADE_REQUIRED', endpoint.path);
    },
    wsHandler: (socket, request) => {
      let connection: SocketConnection;
      try {
        const link = runtime.openSocket(endpoint.methodName, {
          connectionId: String(request.id),
          requestId: String(request.id),
          params: { ...(request.params as Record<string, unknown>) },
          query: { ...(request.query as Record<string, unknown>) },
          headers: flattenHeaders(request.headers),
        }, opts.traceSettings?.admit(runtime.definition.name, requestTrace(request)));
        connection = new SocketConnection(socket, link, endpoint, runtime.definition.name, request.log, () => !opts.state.ready);
        requestUpgraded(request);
      } catch (err) {
        requestUpgraded(request);
        releaseSlot(request);
        socket.close(statusOf(err) === 503 ? CLOSE.goingAway : CLOSE.internalError, closeReason((err as Error).message));
        return;
      }
      void connection.run().finally(() => releaseSlot(request));
    },
  });
}

function socketSchema(model: ModelDefinition, endpoint: SocketEndpointDefinition, schemas: DtoSchemas): FastifySchema {
  const messages = [
    endpoint.message && `Client text messages: JSON \`${endpoint.message.name}\`, validated; an invalid one is answered with \`{"error", "code", "detail"}\` and the connection stays open.`,
    'Client binary messages reach the model as bytes.',
    endpoint.response && `Server messages: JSON \`${endpoint.response.name}\` (binary frames for bytes).`,
    `One model instance serves the whole connection. Idle connections close after ${endpoint.idleTimeoutMs} ms (1001); at most ${endpoint.maxConnections} connections, more are refused with 503 before the upgrade; past ${INPUT_WINDOW} unread messages (or ${INPUT_WINDOW_BYTES / 1024 / 1024} MiB) the server stops reading. Close codes: 1000 the session ended, 1001 idle or server shutting down, 1008 the model refused the input (4xx), 1011 the model failed. A client that does not answer a close frame within ${CLOSE_TIMEOUT_MS / 1000} s is disconnected.`,
  ];
  const description = [endpoint.description, model.description && `Model **${model.name}** v${model.version}: ${model.description}.`, ...messages]
    .filter(Boolean)
    .join('\n\n');
  const errorRef = { $ref: 'ErrorBody#' };
  const schema: Record<string, unknown> = {
    summary: endpoint.summary ?? `${model.name}.${endpoint.methodName} (WebSocket)`,
    description,
    tags: [...endpoint.tags],
    operationId: `${model.name}_${endpoint.methodName}`,
    response: {
      101: { description: 'Switching Protocols: the connection is now a WebSocket.' },
      426: errorRef,
      503: errorRef,
    },
  };
  const messageSchemas: Record<string, unknown> = {};
  if (endpoint.message && schemas[endpoint.message.name]) messageSchemas.client = schemaRef(endpoint.message);
  if (endpoint.response && schemas[endpoint.response.name]) messageSchemas.server = schemaRef(endpoint.response);
  return Object.assign(schema, { 'x-websocket': { messages: messageSchemas } }) as FastifySchema;
}
