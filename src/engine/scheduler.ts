/**
 * What waits for an instance of one model version: Triton's Scheduler (src/scheduler.h), one per
 * way of waiting, registered on the version's InstanceEngine (`engine.register`). The engine alone
 * offers free instances (`notifyIdle`), reports instances going down and coming back, fails what
 * is queued when no instance is left, counts pending work and drains; a scheduler only decides
 * which queued requests an offered instance runs next.
 *
 * The kinds this fits: the dynamic batcher (batches of independent requests), stream-holding
 * requests (a batcher of size 1 whose request keeps its instance for its stream), the sequence
 * scheduler (requests bound to one instance per sequence). An iteration-level scheduler
 * (continuous batching for a generator, diffusion steps) fits the same contract: it keeps its
 * running set of requests across many executions on the instance it holds, and at each
 * `notifyIdle` (the instance finished a step) admits queued requests into that set and evicts
 * finished or cancelled ones before sending the next step; per-request results go out on each
 * request's StreamChannel. Its `pendingCount` is what waits for admission, its `inflightCount`
 * the running set, and `drain` resolves once both are empty.
 */
export interface Scheduler {
  /** The model version or endpoint, for errors and logs. */
  readonly owner: string;
  /** Queued, not yet given an instance. */
  readonly pendingCount: number;
  /** Given an instance, not yet settled. */
  readonly inflightCount: number;
  /** An instance is free, or can take a batch queued behind its running one. */
  notifyIdle(): void;
  /** Instance `index` died; `heldDown` once it is past its restart limit and stays down for a while. */
  instanceDown?(index: number, heldDown?: Error): void;
  /** Instance `index` is running again after a restart. */
  instanceUp?(index: number): void;
  /** Fails every queued request with `error`: no instance is left to run them. */
  rejectQueued(error: Error): void;
  /** Stops taking requests; resolves once nothing is queued or in flight. */
  drain(): Promise<void>;
}
