import type { BatchPolicy } from '../spec/batch-policy.js';
import type { PriorityQueues, QueuedItem } from './priority-queues.js';

/** How a batcher's hooks shape its batches beyond maxBatchSize (see DynamicBatcher's BatcherHooks). */
export interface BatchFormationHooks<T> {
  /**
   * A padded budget per batch beside maxBatchSize, as TEI's `--max-batch-tokens`: a batch of n
   * requests costs n × its largest request's cost (every row is padded to the longest), and closes
   * before the request that would take it over `limit`. A request over the budget on its own still
   * runs, alone. With `minFill`, a batch is the oldest request and the queued ones nearest its
   * cost, for as long as at least that share of its padded cost is real (texts of about one length
   * together, so padding wastes little); the oldest always goes, so none waits for ever. For
   * batchers without priority levels, `rows` or `joins`.
   */
  readonly budget?: { readonly limit: number; readonly minFill?: number; cost(payload: T): number };
  /**
   * How many rows a request adds to its batch (Triton's `request->BatchSize()`): maxBatchSize then
   * counts rows, not requests. Without it every request is one row. A request of more rows than
   * maxBatchSize still runs, alone (the caller refuses such requests before they are queued).
   */
  rows?(payload: T): number;
  /**
   * Whether `next` may join the batch `first` opened (Triton's `enforce_equal_shape_tensors` and
   * `CustomBatchIncl`). As in Triton, the batch closes before the first request that does not
   * join, and goes at once: waiting cannot grow it. Requests never overtake one another, so
   * interleaved kinds (A, B, A) make batches of one kind each (A | B | A).
   */
  joins?(first: T, next: T): boolean;
}

/** The batch the queue's head forms now: how many requests, and whether waiting could grow it. */
export interface NextBatch {
  size: number;
  /** It holds maxBatchSize rows, or the next request does not fit (rows, joins, budget). */
  full: boolean;
  /** The most of its requests that make a preferred batch size in rows; 0 for none. */
  preferred: number;
}

function largestPreferred(sizes: readonly number[], fits: number): number {
  for (let i = sizes.length - 1; i >= 0; i--) if (sizes[i] <= fits) return sizes[i];
  return 0;
}

/** A queued request as batch formation sees it: its payload. */
interface Formable<T, Q> extends QueuedItem<Q> {
  readonly entry: { readonly payload: T; readonly enqueuedAtUs: number };
}

/**
 * Which queued requests make the next batch, as Triton's dynamic batcher forms one
 * (src/dynamic_batch_scheduler.cc, GetDynamicBatch): rows, equal shapes and a token budget decide
 * where the batch at the queue's head closes; the batcher decides when it goes.
 */
export class BatchFormation<T, Q extends Formable<T, Q>> {
  /** Reused by every next(): the batcher asks for it on every pump. */
  private readonly batch: NextBatch = { size: 0, full: false, preferred: 0 };

  constructor(
    private readonly policy: BatchPolicy,
    private readonly hooks: BatchFormationHooks<T>,
    private readonly queues: PriorityQueues<Q>,
  ) {}

  /**
   * Triton's GetDynamicBatch admission: the requests at the head of the queue, in batch order, up
   * to the first that does not fit: over maxBatchSize rows, not joining the first, or over the
   * budget. The first request always goes, so a request that fits no batch still runs, alone.
   */
  next(): NextBatch {
    const { rows, joins, budget } = this.hooks;
    if (rows !== undefined || joins !== undefined || budget !== undefined) return this.walk();
    const { maxBatchSize, preferredBatchSizes } = this.policy;
    const next = this.batch;
    next.size = Math.min(this.queues.size, maxBatchSize);
    next.full = this.queues.size >= maxBatchSize;
    next.preferred = largestPreferred(preferredBatchSizes, next.size);
    return next;
  }

  /** next() with hooks that look at each request; apart, so that a batcher without them allocates no closure. */
  private walk(): NextBatch {
    const { maxBatchSize, preferredBatchSizes } = this.policy;
    const { rows, joins, budget } = this.hooks;
    const next = this.batch;
    let size = 0;
    let batchRows = 0;
    let widest = 0;
    let preferred = 0;
    let first: T | undefined;
    let full = false;
    this.queues.visitInBatchOrder((request) => {
      const payload = request.entry.payload;
      const added = rows?.(payload) ?? 1;
      const cost = budget === undefined ? 0 : Math.max(widest, budget.cost(payload));
      if (first !== undefined) {
        const fits = batchRows + added <= maxBatchSize && (joins?.(first, payload) ?? true) && (budget === undefined || cost * (size + 1) <= budget.limit);
        if (!fits) {
          full = true;
          return false;
        }
      }
      first ??= payload;
      size++;
      batchRows += added;
      widest = cost;
      if (preferredBatchSizes.includes(batchRows)) preferred = size;
      full = batchRows >= maxBatchSize;
      return !full;
    });
    next.size = size;
    next.full = full;
    next.preferred = preferred;
    return next;
  }

  /** Takes the next batch of `size` requests off the queues; with a budget's minFill, the oldest and those nearest its cost. */
  take(size: number): Q[] {
    const budget = this.hooks.budget;
    return budget?.minFill !== undefined
      ? this.queues.takeNearest(this.policy.maxBatchSize, budget.limit, budget.minFill, (request) => budget.cost(request.entry.payload))
      : this.queues.take(size);
  }
}
