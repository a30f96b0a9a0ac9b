import type { FastifyReply } from 'fastify';

export interface DisconnectSignal {
  /** Aborts when the connection goes away before the response has been written. */
  readonly signal: AbortSignal;
  /** Stops watching the connection; the signal is not aborted after this. */
  release(): void;
}

/** Watches a reply's connection so that work for a client that has gone away can be cancelled. */
export function disconnectSignal(reply: Pick<FastifyReply, 'raw'>): DisconnectSignal {
  const abort = new AbortController();
  // The response's 'close' means the connection went away; the request's 'close' also fires as
  // soon as its body has been read, which would cancel every queued request with a body.
  const onClose = (): void => {
    if (!reply.raw.writableEnded) abort.abort();
  };
  reply.raw.once('close', onClose);
  return { signal: abort.signal, release: () => reply.raw.off('close', onClose) };
}
