import { createError, type ServeFnError } from '../errors/index.js';

/** Triton's ModelQueuePolicy, per priority level (Triton's user_guide/batcher.md). */
export interface QueuePolicy {
  /** Most requests this level may hold queued; 0 = unbounded. */
  readonly maxQueueSize: number;
  /** How long a request may wait in the queue, in µs; 0 = no limit. */
  readonly defaultTimeoutUs: number;
  /** Whether a request may ask for a shorter timeout than `defaultTimeoutUs`. */
  readonly allowTimeoutOverride: boolean;
  /** REJECT fails an expired request; DELAY moves it behind every unexpired request of its level. */
  readonly timeoutAction: 'REJECT' | 'DELAY';
}

/** Triton's ModelDynamicBatching plus max_batch_size, with times in microseconds. */
export interface BatchPolicy {
  readonly maxBatchSize: number;
  readonly maxQueueDelayUs: number;
  /** Ascending, without duplicates, each within 1..maxBatchSize. */
  readonly preferredBatchSizes: readonly number[];
  readonly preserveOrdering: boolean;
  /** Number of priority levels, 1 = highest; 0 = no priorities. */
  readonly priorityLevels: number;
  /** The level of a request that gives no priority; 0 when priorityLevels is 0. */
  readonly defaultPriorityLevel: number;
  readonly defaultQueuePolicy: QueuePolicy;
  /** Levels whose queue policy differs from defaultQueuePolicy. */
  readonly priorityQueuePolicy: Readonly<Record<number, QueuePolicy>>;
}

export type BatchPolicyInput = Partial<Omit<BatchPolicy, 'defaultQueuePolicy' | 'priorityQueuePolicy'>> & {
  defaultQueuePolicy?: Partial<QueuePolicy>;
  priorityQueuePolicy?: Record<number, Partial<QueuePolicy>>;
};

/** Triton's default when it fills in max_batch_size itself (`--backend-config=default-max-batch-size`, 4 unless set). */
export const DEFAULT_MAX_BATCH_SIZE = 4;

const DEFAULT_QUEUE_POLICY: QueuePolicy = Object.freeze({
  maxQueueSize: 0,
  defaultTimeoutUs: 0,
  allowTimeoutOverride: false,
  timeoutAction: 'REJECT',
});

const BATCH_OPTIONS: ReadonlySet<string> = new Set([
  'maxBatchSize', 'maxQueueDelayUs', 'preferredBatchSizes', 'preserveOrdering', 'priorityLevels',
  'defaultPriorityLevel', 'defaultQueuePolicy', 'priorityQueuePolicy',
]);
const QUEUE_OPTIONS: ReadonlySet<string> = new Set(Object.keys(DEFAULT_QUEUE_POLICY));

type Invalid = (option: string, reason: string) => ServeFnError;

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function count(value: unknown, option: string, what: string, invalid: Invalid): number {
  if (!isCount(value)) throw invalid(option, `must be a non-negative integer ${what}, got ${describe(value)}`);
  return value;
}

function flag(value: unknown, option: string, invalid: Invalid): boolean {
  if (typeof value !== 'boolean') throw invalid(option, `must be true or false, got ${describe(value)}`);
  return value;
}

/** Unknown keys are most often misspelt options (`maxQueueDelayMs`), so they fail loudly. */
function rejectUnknown(input: object, known: ReadonlySet<string>, prefix: string, invalid: Invalid): void {
  for (const key of Object.keys(input)) {
    if (!known.has(key)) throw invalid(`${prefix}${key}`, `is not a known option (known: ${[...known].join(', ')})`);
  }
}

function normalizeQueuePolicy(
  input: Partial<QueuePolicy> | undefined,
  base: QueuePolicy,
  option: string,
  invalid: Invalid,
): QueuePolicy {
  if (input === undefined) return base;
  if (typeof input !== 'object' || input === null) throw invalid(option, `must be an object, got ${describe(input)}`);
  rejectUnknown(input, QUEUE_OPTIONS, `${option}.`, invalid);
  const timeoutAction = input.timeoutAction ?? base.timeoutAction;
  if (timeoutAction !== 'REJECT' && timeoutAction !== 'DELAY') {
    throw invalid(`${option}.timeoutAction`, `must be 'REJECT' or 'DELAY', got ${describe(timeoutAction)}`);
  }
  return Object.freeze({
    maxQueueSize: count(input.maxQueueSize ?? base.maxQueueSize, `${option}.maxQueueSize`, 'number of requests', invalid),
    defaultTimeoutUs: count(input.defaultTimeoutUs ?? base.defaultTimeoutUs, `${option}.defaultTimeoutUs`, 'number of microseconds', invalid),
    allowTimeoutOverride: flag(input.allowTimeoutOverride ?? base.allowTimeoutOverride, `${option}.allowTimeoutOverride`, invalid),
    timeoutAction,
  });
}

function normalizePreferred(input: unknown, maxBatchSize: number, invalid: Invalid): readonly number[] {
  if (!Array.isArray(input)) throw invalid('preferredBatchSizes', `must be an array of batch sizes, got ${describe(input)}`);
  for (const size of input) {
    if (!Number.isSafeInteger(size) || size < 1) throw invalid('preferredBatchSizes', `size ${describe(size)} is not an integer >= 1`);
    if (size > maxBatchSize) throw invalid('preferredBatchSizes', `size ${size} exceeds maxBatchSize ${maxBatchSize}`);
  }
  return Object.freeze([...new Set(input as number[])].sort((a, b) => a - b));
}

function normalizeDefaultLevel(input: unknown, priorityLevels: number, invalid: Invalid): number {
  if (priorityLevels === 0) {
    if (input !== undefined && input !== 0) {
      throw invalid('defaultPriorityLevel', `must be 0 when priorityLevels is 0, got ${describe(input)}`);
    }
    return 0;
  }
  // Without an explicit default, requests that name no priority queue behind those that do.
  const level = input ?? priorityLevels;
  if (!Number.isSafeInteger(level) || (level as number) < 1 || (level as number) > priorityLevels) {
    throw invalid('defaultPriorityLevel', `must be an integer in 1..${priorityLevels}, got ${describe(level)}`);
  }
  return level as number;
}

function normalizeLevelPolicies(
  input: unknown,
  priorityLevels: number,
  base: QueuePolicy,
  invalid: Invalid,
): Readonly<Record<number, QueuePolicy>> {
  const policies: Record<number, QueuePolicy> = {};
  if (input === undefined) return Object.freeze(policies);
  if (typeof input !== 'object' || input === null) {
    throw invalid('priorityQueuePolicy', `must be an object keyed by priority level, got ${describe(input)}`);
  }
  for (const [key, value] of Object.entries(input)) {
    const level = Number(key);
    if (!Number.isSafeInteger(level) || level < 1 || level > priorityLevels) {
      throw invalid('priorityQueuePolicy', `level ${key} is outside the priority levels 1..${priorityLevels}`);
    }
    policies[level] = normalizeQueuePolicy(value as Partial<QueuePolicy>, base, `priorityQueuePolicy[${key}]`, invalid);
  }
  return Object.freeze(policies);
}

/**
 * Fills in defaults and checks every field, so the batcher can trust its policy. Per-level queue
 * policies are merged over `defaultQueuePolicy`. Throws SF_ERR_BATCH_SIZE_INVALID or
 * SF_ERR_BATCH_OPTION_INVALID naming `owner` (e.g. 'CosyVoice.inferenceSft').
 */
export function normalizeBatchPolicy(input: BatchPolicyInput, owner: string): BatchPolicy {
  const invalid: Invalid = (option, reason) => createError('SF_ERR_BATCH_OPTION_INVALID', owner, option, reason);
  rejectUnknown(input, BATCH_OPTIONS, '', invalid);
  const maxBatchSize = input.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE;
  if (!Number.isSafeInteger(maxBatchSize) || maxBatchSize < 1) {
    throw createError('SF_ERR_BATCH_SIZE_INVALID', owner, describe(maxBatchSize));
  }
  const priorityLevels = count(input.priorityLevels ?? 0, 'priorityLevels', 'number of levels', invalid);
  const defaultQueuePolicy = normalizeQueuePolicy(input.defaultQueuePolicy, DEFAULT_QUEUE_POLICY, 'defaultQueuePolicy', invalid);
  return Object.freeze({
    maxBatchSize,
    maxQueueDelayUs: count(input.maxQueueDelayUs ?? 0, 'maxQueueDelayUs', 'number of microseconds', invalid),
    preferredBatchSizes: normalizePreferred(input.preferredBatchSizes ?? [], maxBatchSize, invalid),
    preserveOrdering: flag(input.preserveOrdering ?? false, 'preserveOrdering', invalid),
    priorityLevels,
    defaultPriorityLevel: normalizeDefaultLevel(input.defaultPriorityLevel, priorityLevels, invalid),
    defaultQueuePolicy,
    priorityQueuePolicy: normalizeLevelPolicies(input.priorityQueuePolicy, priorityLevels, defaultQueuePolicy, invalid),
  });
}

/** The queue policy that governs requests of priority `level` (0 when the policy has no levels). */
export function queuePolicyFor(policy: BatchPolicy, level: number): QueuePolicy {
  return policy.priorityQueuePolicy[level] ?? policy.defaultQueuePolicy;
}

/**
 * The level a request asking for `priority` waits at: 1 is highest, 0 means the policy's default
 * level; without priority levels only 0 is valid (and the level is 0). Throws SF_ERR_PRIORITY_INVALID.
 */
export function priorityLevelFor(policy: BatchPolicy, priority: number): number {
  const { priorityLevels, defaultPriorityLevel } = policy;
  if (!Number.isInteger(priority) || priority < 0 || priority > priorityLevels) {
    const allowed = priorityLevels > 0 ? `this model has priority levels 1..${priorityLevels} (0 = default)` : 'this model has no priority levels, only 0 (default) is accepted';
    throw createError('SF_ERR_PRIORITY_INVALID', priority, allowed);
  }
  return priority === 0 ? defaultPriorityLevel : priority;
}

/**
 * The queue timeout of a request that asked for `requestedUs` (undefined or 0: none) under its
 * level's policy: a request may only lower the default, and only where overrides are allowed.
 * Throws SF_ERR_TIMEOUT_INVALID for anything but a non-negative integer number of µs.
 */
export function queueTimeoutUs(policy: QueuePolicy, requestedUs: number | undefined): number {
  if (requestedUs !== undefined && !(Number.isSafeInteger(requestedUs) && requestedUs >= 0)) throw createError('SF_ERR_TIMEOUT_INVALID', requestedUs);
  if (!policy.allowTimeoutOverride || requestedUs === undefined || requestedUs === 0) return policy.defaultTimeoutUs;
  return policy.defaultTimeoutUs === 0 ? requestedUs : Math.min(policy.defaultTimeoutUs, requestedUs);
}

/**
 * Dispatch for endpoints without @Batch: whatever is queued (up to 32) goes to an idle instance at
 * once, and the instance still calls the method once per request, in order. Grouping only saves
 * thread hops; the model never sees a batch. Queue policies and draining work as for @Batch.
 */
export const UNBATCHED_POLICY: BatchPolicy = normalizeBatchPolicy({ maxBatchSize: 32 }, 'unbatched endpoint');
