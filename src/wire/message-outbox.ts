import { now } from './epoch-time.js';

/** What an outbox posts to: a worker, or the worker's parentPort. */
export interface MessagePort {
  postMessage(message: unknown, transfer: readonly ArrayBuffer[]): void;
}

/** Several messages in one postMessage; the receiver handles them in order, as if posted one by one. */
export interface Bundle<M> {
  readonly type: 'messages';
  readonly messages: readonly M[];
}

/** Hands `handle` the messages of `message` in order: those of a bundle (and of bundles in it), or `message` itself. */
export function forEachMessage<M>(message: M | Bundle<M>, handle: (message: Exclude<M, Bundle<M>>) => void): void {
  if ((message as { readonly type?: unknown }).type !== 'messages') return handle(message as Exclude<M, Bundle<M>>);
  for (const each of (message as Bundle<M>).messages) forEachMessage(each, handle);
}

interface Entry<M> {
  readonly message: M;
  readonly transfer: readonly ArrayBuffer[];
  readonly failed?: (err: Error) => void;
}

/**
 * The messages from one thread to another, sent together: most of a postMessage's cost is per
 * message, not per byte (one per result took 47% of an echo model's worker thread, one per turn
 * 20%), so what is queued before `schedule` runs its flush goes in one Bundle.
 * `schedule` is queueMicrotask or setImmediate, never a timer, so nothing waits at low load.
 * Messages keep their order: `send` posts at once, after whatever is queued.
 */
export class MessageOutbox<M> {
  private entries: Entry<M>[] = [];
  private scheduled = false;
  private firstQueuedMs = 0;

  constructor(
    private readonly port: () => MessagePort | undefined,
    private readonly schedule: (flush: () => void) => void,
  ) {}

  /**
   * Sends `message` (and `transfer`) with the others queued now. A message that cannot be cloned is
   * sent alone and `failed` hears why, as a postMessage of its own would have thrown; without
   * `failed` the error is thrown from the flush.
   */
  queue(message: M, transfer: readonly ArrayBuffer[], failed?: (err: Error) => void): void {
    if (this.entries.length === 0) this.firstQueuedMs = now();
    this.entries.push({ message, transfer, failed });
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(this.scheduledFlush);
  }

  /**
   * Posts `message` now, after the queued ones; throws what postMessage throws. With the receiver
   * gone nothing is posted: its owner has already failed whatever the message was about.
   */
  send(message: M, transfer: readonly ArrayBuffer[] = []): void {
    this.flush();
    this.port()?.postMessage(message, transfer);
  }

  private readonly scheduledFlush = (): void => {
    this.scheduled = false;
    this.flush();
  };

  /** When the oldest message still waiting for the flush was queued (see `now`); read it while one waits. */
  get oldestQueuedMs(): number {
    return this.firstQueuedMs;
  }

  /** Posts what is queued now rather than at the scheduled flush. */
  flush(): void {
    const entries = this.entries;
    if (entries.length === 0) return;
    this.entries = [];
    // With the receiver gone, the owner has failed what was waiting for it.
    const port = this.port();
    if (!port) return;
    if (entries.length === 1) return postAlone(port, entries[0]);
    const bundle: Bundle<M> = { type: 'messages', messages: entries.map((e) => e.message) };
    try {
      port.postMessage(bundle, entries.flatMap((e) => e.transfer));
    } catch {
      // A failed postMessage detaches nothing (serialisation runs before the transfer), so each
      // message can go alone and only the one that cannot be cloned fails, as before bundling.
      for (const entry of entries) postAlone(port, entry);
    }
  }
}

function postAlone<M>(port: MessagePort, entry: Entry<M>): void {
  try {
    port.postMessage(entry.message, entry.transfer);
  } catch (err) {
    if (!entry.failed) throw err;
    entry.failed(err as Error);
  }
}
