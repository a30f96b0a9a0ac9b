import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * One access-log line per request, as uvicorn writes it: method, path, status and duration. Fastify's
 * default writes two entries per request with the request and the reply serialised (a dozen lines once
 * pino-pretty spreads them out) and a third for a 404. A bare message keeps pino on its fast path: the
 * string is all there is to serialise. Errors keep fastify's own entries, with the error.
 */
export class AccessLogController extends LogController {
  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // Below info (`start --log-level warn`) the line would be built for nothing on every request;
    // pino's isLevelEnabled (https://getpino.io/#/docs/api?id=islevelenabled) says so up front.
    if (!error && !infoEnabled(reply.log)) return;
    const line = `${request.method} ${request.url} ${reply.statusCode} ${reply.elapsedTime.toFixed(1)} ms`;
    if (error) reply.log.error({ err: error }, line);
    else reply.log.info(line);
  }
}

/** fastify's logger type leaves isLevelEnabled out; a logger without it (not pino) always gets the line. */
function infoEnabled(log: FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }): boolean {
  return log.isLevelEnabled?.('info') ?? true;
}
