import { queuePolicyFor, type BatchPolicy, type QueuePolicy } from '../spec/batch-policy.js';
import { LinkedQueue, type Link } from './linked-queue.js';

/** One priority level: its queue policy and the requests waiting at that level. */
export interface QueueLevel<Q> {
  readonly policy: QueuePolicy;
  /** Unexpired requests in arrival order. */
  readonly waiting: LinkedQueue<Q>;
  /** Requests whose DELAY timeout expired, in expiry order; they go after every request in `waiting`. */
  readonly delayed: LinkedQueue<Q>;
}

/** What a request carries to wait in PriorityQueues. */
export interface QueuedItem<Q> {
  readonly entry: { readonly enqueuedAtUs: number };
  readonly level: QueueLevel<Q>;
  /** Clock time at which the queue timeout expires; Infinity when there is none. */
  readonly expiresAtUs: number;
  /** The level queue the request waits in, and its place there; undefined once it left the queue. */
  place: { readonly queue: LinkedQueue<Q>; readonly link: Link<Q> } | undefined;
}

/**
 * Where requests wait for a batch, as Triton's dynamic batcher keeps them: one queue per priority
 * level (index 0 the highest), arrival order within a level, and requests whose DELAY timeout expired
 * after the unexpired ones of their level. Batches are taken in that order.
 */
export class PriorityQueues<Q extends QueuedItem<Q>> {
  readonly levels: readonly QueueLevel<Q>[];
  /** Requests waiting at every level. */
  size = 0;

  constructor(policy: BatchPolicy) {
    const levelNumbers = policy.priorityLevels === 0 ? [0] : Array.from({ length: policy.priorityLevels }, (_, i) => i + 1);
    this.levels = levelNumbers.map((n) => ({ policy: queuePolicyFor(policy, n), waiting: new LinkedQueue<Q>(), delayed: new LinkedQueue<Q>() }));
  }

  isFull(level: QueueLevel<Q>): boolean {
    const { maxQueueSize } = level.policy;
    return maxQueueSize > 0 && level.waiting.size + level.delayed.size >= maxQueueSize;
  }

  enqueue(item: Q): void {
    this.placeAtEnd(item, item.level.waiting);
    this.size++;
  }

  /** Whether the request waits unexpired (not delayed, not gone). */
  isWaiting(item: Q): boolean {
    return item.place?.queue === item.level.waiting;
  }

  /** Moves a request whose DELAY timeout expired behind every unexpired request of its level. */
  delay(item: Q): void {
    this.placeAtEnd(item, item.level.delayed);
  }

  remove(item: Q): void {
    if (!item.place) return;
    item.place.queue.remove(item.place.link);
    item.place = undefined;
    this.size--;
  }

  /** Takes up to `size` requests off the queues in batch order. */
  take(size: number): Q[] {
    const batch: Q[] = [];
    for (const queue of this.levelQueues()) {
      for (const item of queue) {
        if (batch.length === size) return batch;
        this.remove(item);
        batch.push(item);
      }
    }
    return batch;
  }

  /**
   * Shows `visit` the waiting requests in batch order until it returns false; it must remove none.
   * A callback rather than a generator: batch formation walks the queue's head on every submit.
   */
  visitInBatchOrder(visit: (item: Q) => boolean): void {
    for (const level of this.levels) {
      if (!level.waiting.visit(visit) || !level.delayed.visit(visit)) return;
    }
  }

  /**
   * Takes the first request in batch order and, of the others, those whose cost is nearest its own,
   * while `count` allow, `limit` holds for the batch padded to its costliest (each request costing as much as the costliest),
   * and at least `minFill` of that padded cost is the requests' own.
   */
  takeNearest(count: number, limit: number, minFill: number, cost: (item: Q) => number): Q[] {
    const waiting: { item: Q; cost: number; order: number }[] = [];
    for (const queue of this.levelQueues()) for (const item of queue) waiting.push({ item, cost: cost(item), order: waiting.length });
    if (waiting.length === 0) return [];
    const [first, ...others] = waiting;
    others.sort((a, b) => Math.abs(a.cost - first.cost) - Math.abs(b.cost - first.cost) || a.order - b.order);
    const chosen = [first];
    let widest = first.cost;
    let own = first.cost;
    for (const candidate of others) {
      if (chosen.length === count) break;
      const next = Math.max(widest, candidate.cost);
      const padded = next * (chosen.length + 1);
      // Candidates come nearest first, so once one would leave too much padding, the rest would too.
      if (own + candidate.cost < minFill * padded) break;
      if (padded > limit) continue;
      chosen.push(candidate);
      widest = next;
      own += candidate.cost;
    }
    chosen.sort((a, b) => a.order - b.order);
    for (const { item } of chosen) this.remove(item);
    return chosen.map(({ item }) => item);
  }

  oldestEnqueuedAtUs(): number {
    let oldest = Infinity;
    for (const level of this.levels) {
      for (const item of level.waiting) {
        oldest = Math.min(oldest, item.entry.enqueuedAtUs);
        break;
      }
      for (const item of level.delayed) oldest = Math.min(oldest, item.entry.enqueuedAtUs);
    }
    return oldest;
  }

  /**
   * Calls `expire` for each request among the next `window` a batch would take whose timeout is due
   * at `now`; `expire` may remove or delay it, and the window moves on past it.
   */
  expireDue(now: number, window: number, expire: (item: Q) => void): void {
    for (const level of this.levels) {
      for (const item of level.waiting) {
        if (window === 0) return;
        if (item.expiresAtUs <= now) expire(item);
        else window--;
      }
      window -= Math.min(window, level.delayed.size);
    }
  }

  private *levelQueues(): Iterable<LinkedQueue<Q>> {
    for (const level of this.levels) {
      yield level.waiting;
      yield level.delayed;
    }
  }

  private placeAtEnd(item: Q, queue: LinkedQueue<Q>): void {
    if (item.place) item.place.queue.remove(item.place.link);
    item.place = { queue, link: queue.push(item) };
  }
}
