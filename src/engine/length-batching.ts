import type { BatchFormationHooks } from './batch-formation.js';
import type { QueuedTensorRequest, ValidatedRequest } from './instance-engine.js';

/**
 * Batch formation by length for a tensor model whose rows are padded to the longest (speech):
 * Triton's and FunASR's sort-by-length, as BatchFormation's budget `minFill` forms batches.
 */
export interface LengthBatching {
  /** A request's length, in any unit proportional to its padded cost. */
  cost(request: ValidatedRequest): number;
  /** The least share of a batch's padded cost that is its requests' own. */
  readonly minFill: number;
}

/** The token budget's formation with no limit: each batch is the oldest request and the queued ones nearest its length. */
export function lengthBudget(byLength: LengthBatching): NonNullable<BatchFormationHooks<QueuedTensorRequest>['budget']> {
  return { limit: Infinity, minFill: byLength.minFill, cost: (queued) => byLength.cost(queued.request) };
}
