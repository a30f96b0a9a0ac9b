import type { FastifyReply } from 'fastify';
import type { CancelSignal } from '../spec/cancel-signal.js';

export interface DisconnectSignal extends CancelSignal {
  /**
   * Aborts when the connection goes away before the response has been written; for APIs that
   * take an AbortSignal. Built on first use: Node's AbortController costs more than the rest of
   * the watch, and a request dispatched at once never needs one.
   */
  readonly signal: AbortSignal;
  /** Stops watching the connection; the signal is not aborted after this. */
  release(): void;
}

interface Watcher {
  readonly listener: () => void;
  readonly onClose: () => void;
}

/**
 * Watches a reply's connection so that work for a client that has gone away can be cancelled. As a
 * CancelSignal it listens to the response's 'close' only while someone (a queued request) listens to it.
 */
class ConnectionWatch implements DisconnectSignal {
  private watchers: Watcher[] | undefined;
  private abort: AbortController | undefined;
  /** Whether the client went away before release; set at release, or by the 'close' of a watcher. */
  private gone = false;
  private released = false;

  constructor(private readonly res: FastifyReply['raw']) {}

  /**
   * The response's 'close' means the connection went away; the request's 'close' also fires as
   * soon as its body has been read, which would cancel every queued request with a body.
   * Node marks a response `closed` when its socket closes (http.OutgoingMessage.closed).
   */
  get aborted(): boolean {
    return this.gone || (!this.released && this.res.closed === true && !this.res.writableEnded);
  }

  get signal(): AbortSignal {
    if (!this.abort) {
      const abort = new AbortController();
      this.abort = abort;
      if (this.aborted) abort.abort();
      else this.addEventListener('abort', () => abort.abort());
    }
    return this.abort.signal;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.released) return;
    const onClose = (): void => {
      if (this.res.writableEnded) return;
      this.gone = true;
      listener();
    };
    this.res.once('close', onClose);
    (this.watchers ??= []).push({ listener, onClose });
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.watchers?.findIndex((w) => w.listener === listener) ?? -1;
    if (i < 0) return;
    this.res.off('close', this.watchers![i].onClose);
    this.watchers!.splice(i, 1);
  }

  // A property, so that `const { release } = disconnectSignal(reply)` keeps its `this`.
  readonly release = (): void => {
    if (this.released) return;
    this.gone = this.aborted;
    this.released = true;
    for (const w of this.watchers ?? []) this.res.off('close', w.onClose);
    this.watchers = undefined;
  };
}

export function disconnectSignal(reply: Pick<FastifyReply, 'raw'>): DisconnectSignal {
  return new ConnectionWatch(reply.raw);
}
