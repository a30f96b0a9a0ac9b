import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import {
  normalizeBatchPolicy,
  priorityLevelFor,
  queuePolicyFor,
  queueTimeoutUs,
  UNBATCHED_POLICY,
  type BatchPolicyInput,
} from '../../src/spec/batch-policy.js';
import { thrown } from '../helpers/thrown.js';

const OWNER = 'CosyVoice.inferenceSft';

const NO_QUEUE_LIMITS = { maxQueueSize: 0, defaultTimeoutUs: 0, allowTimeoutOverride: false, timeoutAction: 'REJECT' };

function errorOf(input: unknown): ServeFnError {
  const error = thrown(() => normalizeBatchPolicy(input as BatchPolicyInput, OWNER));
  expect(error).toBeInstanceOf(ServeFnError);
  return error;
}

function expectOptionError(input: unknown, option: string, reason: string): void {
  const error = errorOf(input);
  expect(error.code).toBe('SF_ERR_BATCH_OPTION_INVALID');
  expect(error.statusCode).toBe(500);
  expect(error.message).toBe(`${OWNER}: @Batch option ${option} is invalid: ${reason}.`);
}

describe('normalizeBatchPolicy', () => {
  it('fills in Triton defaults: max 4, no delay, no preferred sizes, no priorities, unbounded queue', () => {
    expect(normalizeBatchPolicy({}, OWNER)).toEqual({
      maxBatchSize: 4,
      maxQueueDelayUs: 0,
      preferredBatchSizes: [],
      preserveOrdering: false,
      priorityLevels: 0,
      defaultPriorityLevel: 0,
      defaultQueuePolicy: NO_QUEUE_LIMITS,
      priorityQueuePolicy: {},
    });
  });

  it('keeps every given field', () => {
    const policy = normalizeBatchPolicy(
      {
        maxBatchSize: 16,
        maxQueueDelayUs: 2500,
        preferredBatchSizes: [4, 8],
        preserveOrdering: true,
        priorityLevels: 3,
        defaultPriorityLevel: 1,
        defaultQueuePolicy: { maxQueueSize: 100, defaultTimeoutUs: 1_000_000, allowTimeoutOverride: true, timeoutAction: 'DELAY' },
      },
      OWNER,
    );
    expect(policy).toEqual({
      maxBatchSize: 16,
      maxQueueDelayUs: 2500,
      preferredBatchSizes: [4, 8],
      preserveOrdering: true,
      priorityLevels: 3,
      defaultPriorityLevel: 1,
      defaultQueuePolicy: { maxQueueSize: 100, defaultTimeoutUs: 1_000_000, allowTimeoutOverride: true, timeoutAction: 'DELAY' },
      priorityQueuePolicy: {},
    });
  });

  it('returns a deeply frozen policy', () => {
    const policy = normalizeBatchPolicy(
      { maxBatchSize: 8, preferredBatchSizes: [2], priorityLevels: 2, priorityQueuePolicy: { 1: { maxQueueSize: 3 } } },
      OWNER,
    );
    expect(Object.isFrozen(policy)).toBe(true);
    expect(Object.isFrozen(policy.preferredBatchSizes)).toBe(true);
    expect(Object.isFrozen(policy.defaultQueuePolicy)).toBe(true);
    expect(Object.isFrozen(policy.priorityQueuePolicy)).toBe(true);
    expect(Object.isFrozen(policy.priorityQueuePolicy[1])).toBe(true);
  });

  it('does not keep references to the caller objects', () => {
    const preferred = [4, 2];
    const policy = normalizeBatchPolicy({ maxBatchSize: 8, preferredBatchSizes: preferred }, OWNER);
    preferred.push(8);
    expect(policy.preferredBatchSizes).toEqual([2, 4]);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '4'])(
    'rejects maxBatchSize %s with SF_ERR_BATCH_SIZE_INVALID',
    (maxBatchSize) => {
      const error = errorOf({ maxBatchSize });
      expect(error.code).toBe('SF_ERR_BATCH_SIZE_INVALID');
      const shown = typeof maxBatchSize === 'string' ? JSON.stringify(maxBatchSize) : String(maxBatchSize);
      expect(error.message).toBe(`${OWNER}: @Batch max size must be an integer >= 1 (got ${shown}).`);
    },
  );

  it.each([
    [-1, 'must be a non-negative integer number of microseconds, got -1'],
    [0.5, 'must be a non-negative integer number of microseconds, got 0.5'],
    [Number.POSITIVE_INFINITY, 'must be a non-negative integer number of microseconds, got Infinity'],
  ])('rejects maxQueueDelayUs %s', (maxQueueDelayUs, reason) => {
    expectOptionError({ maxQueueDelayUs }, 'maxQueueDelayUs', reason);
  });

  it('sorts preferred batch sizes and drops duplicates', () => {
    expect(normalizeBatchPolicy({ maxBatchSize: 8, preferredBatchSizes: [8, 2, 4, 2] }, OWNER).preferredBatchSizes).toEqual([2, 4, 8]);
  });

  it('rejects preferred batch sizes above maxBatchSize, below 1, non-integer, or not in an array', () => {
    expectOptionError({ maxBatchSize: 8, preferredBatchSizes: [4, 9] }, 'preferredBatchSizes', 'size 9 exceeds maxBatchSize 8');
    expectOptionError({ maxBatchSize: 8, preferredBatchSizes: [0] }, 'preferredBatchSizes', 'size 0 is not an integer >= 1');
    expectOptionError({ maxBatchSize: 8, preferredBatchSizes: [2.5] }, 'preferredBatchSizes', 'size 2.5 is not an integer >= 1');
    expectOptionError({ preferredBatchSizes: 4 }, 'preferredBatchSizes', 'must be an array of batch sizes, got 4');
  });

  it('rejects a non-boolean preserveOrdering', () => {
    expectOptionError({ preserveOrdering: 'yes' }, 'preserveOrdering', 'must be true or false, got "yes"');
  });

  it('rejects a negative or non-integer priorityLevels', () => {
    expectOptionError({ priorityLevels: -1 }, 'priorityLevels', 'must be a non-negative integer number of levels, got -1');
    expectOptionError({ priorityLevels: 1.5 }, 'priorityLevels', 'must be a non-negative integer number of levels, got 1.5');
  });

  it('defaults defaultPriorityLevel to the lowest level when there are priority levels', () => {
    expect(normalizeBatchPolicy({ priorityLevels: 3 }, OWNER).defaultPriorityLevel).toBe(3);
  });

  it('rejects a defaultPriorityLevel outside 1..priorityLevels', () => {
    expectOptionError({ priorityLevels: 3, defaultPriorityLevel: 4 }, 'defaultPriorityLevel', 'must be an integer in 1..3, got 4');
    expectOptionError({ priorityLevels: 3, defaultPriorityLevel: 0 }, 'defaultPriorityLevel', 'must be an integer in 1..3, got 0');
    expectOptionError({ priorityLevels: 3, defaultPriorityLevel: 1.5 }, 'defaultPriorityLevel', 'must be an integer in 1..3, got 1.5');
  });

  it('rejects a non-zero defaultPriorityLevel without priority levels', () => {
    expectOptionError({ defaultPriorityLevel: 1 }, 'defaultPriorityLevel', 'must be 0 when priorityLevels is 0, got 1');
    expect(normalizeBatchPolicy({ defaultPriorityLevel: 0 }, OWNER).defaultPriorityLevel).toBe(0);
  });

  it('merges each per-level queue policy over the default queue policy', () => {
    const policy = normalizeBatchPolicy(
      {
        priorityLevels: 2,
        defaultQueuePolicy: { maxQueueSize: 10, defaultTimeoutUs: 500 },
        priorityQueuePolicy: { 1: { timeoutAction: 'DELAY' } },
      },
      OWNER,
    );
    expect(policy.priorityQueuePolicy).toEqual({
      1: { maxQueueSize: 10, defaultTimeoutUs: 500, allowTimeoutOverride: false, timeoutAction: 'DELAY' },
    });
    expect(queuePolicyFor(policy, 1)).toBe(policy.priorityQueuePolicy[1]);
    expect(queuePolicyFor(policy, 2)).toBe(policy.defaultQueuePolicy);
  });

  it('gives level 0 the default queue policy when there are no priority levels', () => {
    const policy = normalizeBatchPolicy({ defaultQueuePolicy: { maxQueueSize: 7 } }, OWNER);
    expect(queuePolicyFor(policy, 0)).toEqual({ ...NO_QUEUE_LIMITS, maxQueueSize: 7 });
  });

  it('rejects per-level queue policies for levels that do not exist', () => {
    expectOptionError({ priorityLevels: 2, priorityQueuePolicy: { 3: {} } }, 'priorityQueuePolicy', 'level 3 is outside the priority levels 1..2');
    expectOptionError({ priorityLevels: 2, priorityQueuePolicy: { 0: {} } }, 'priorityQueuePolicy', 'level 0 is outside the priority levels 1..2');
    expectOptionError({ priorityQueuePolicy: { 1: {} } }, 'priorityQueuePolicy', 'level 1 is outside the priority levels 1..0');
    expectOptionError(
      { priorityLevels: 2, priorityQueuePolicy: { high: {} } },
      'priorityQueuePolicy',
      'level high is outside the priority levels 1..2',
    );
  });

  it('rejects invalid queue policy fields, naming where they are', () => {
    expectOptionError(
      { defaultQueuePolicy: { maxQueueSize: -1 } },
      'defaultQueuePolicy.maxQueueSize',
      'must be a non-negative integer number of requests, got -1',
    );
    expectOptionError(
      { defaultQueuePolicy: { defaultTimeoutUs: 1.5 } },
      'defaultQueuePolicy.defaultTimeoutUs',
      'must be a non-negative integer number of microseconds, got 1.5',
    );
    expectOptionError(
      { defaultQueuePolicy: { allowTimeoutOverride: 1 } },
      'defaultQueuePolicy.allowTimeoutOverride',
      'must be true or false, got 1',
    );
    expectOptionError(
      { priorityLevels: 2, priorityQueuePolicy: { 2: { timeoutAction: 'DROP' } } },
      'priorityQueuePolicy[2].timeoutAction',
      'must be \'REJECT\' or \'DELAY\', got "DROP"',
    );
    expectOptionError({ defaultQueuePolicy: 5 }, 'defaultQueuePolicy', 'must be an object, got 5');
  });

  it('rejects unknown options, which are usually misspelt ones', () => {
    expectOptionError(
      { maxQueueDelayMs: 5 },
      'maxQueueDelayMs',
      'is not a known option (known: maxBatchSize, maxQueueDelayUs, preferredBatchSizes, preserveOrdering, priorityLevels, defaultPriorityLevel, defaultQueuePolicy, priorityQueuePolicy)',
    );
    expectOptionError(
      { defaultQueuePolicy: { timeout: 5 } },
      'defaultQueuePolicy.timeout',
      'is not a known option (known: maxQueueSize, defaultTimeoutUs, allowTimeoutOverride, timeoutAction)',
    );
  });
});

describe('priorityLevelFor', () => {
  it('maps 0 to the default level and keeps 1..levels; without levels only 0 is valid', () => {
    const levels = normalizeBatchPolicy({ maxBatchSize: 4, priorityLevels: 3, defaultPriorityLevel: 2 }, OWNER);
    expect([0, 1, 3].map((p) => priorityLevelFor(levels, p))).toEqual([2, 1, 3]);
    expect(priorityLevelFor(normalizeBatchPolicy({ maxBatchSize: 4 }, OWNER), 0)).toBe(0);
  });

  it('refuses other values with SF_ERR_PRIORITY_INVALID saying what is allowed', () => {
    const levels = normalizeBatchPolicy({ maxBatchSize: 4, priorityLevels: 3, defaultPriorityLevel: 2 }, OWNER);
    const err = thrown(() => priorityLevelFor(levels, 4));
    expect(err?.code).toBe('SF_ERR_PRIORITY_INVALID');
    expect(err?.message).toBe('Priority 4 is out of range: this model has priority levels 1..3 (0 = default).');
    expect(() => priorityLevelFor(normalizeBatchPolicy({ maxBatchSize: 4 }, OWNER), 1)).toThrow('this model has no priority levels, only 0 (default) is accepted');
  });
});

describe('queueTimeoutUs', () => {
  const policy = { maxQueueSize: 0, defaultTimeoutUs: 1000, allowTimeoutOverride: true, timeoutAction: 'REJECT' as const };

  it('lets a request lower the default only where overrides are allowed', () => {
    expect(queueTimeoutUs(policy, undefined)).toBe(1000);
    expect(queueTimeoutUs(policy, 0)).toBe(1000);
    expect(queueTimeoutUs(policy, 300)).toBe(300);
    expect(queueTimeoutUs(policy, 5000)).toBe(1000);
    expect(queueTimeoutUs({ ...policy, defaultTimeoutUs: 0 }, 5000)).toBe(5000);
    expect(queueTimeoutUs({ ...policy, allowTimeoutOverride: false }, 300)).toBe(1000);
  });

  it('refuses a timeout that is no non-negative integer with SF_ERR_TIMEOUT_INVALID', () => {
    for (const bad of [-1, 1.5, Number.NaN]) expect(() => queueTimeoutUs(policy, bad)).toThrow(/^Timeout .* is invalid/);
  });
});

describe('UNBATCHED_POLICY', () => {
  it('sends up to 32 queued requests at once, with no queue limits', () => {
    expect(UNBATCHED_POLICY).toEqual({
      maxBatchSize: 32,
      maxQueueDelayUs: 0,
      preferredBatchSizes: [],
      preserveOrdering: false,
      priorityLevels: 0,
      defaultPriorityLevel: 0,
      defaultQueuePolicy: NO_QUEUE_LIMITS,
      priorityQueuePolicy: {},
    });
    expect(Object.isFrozen(UNBATCHED_POLICY)).toBe(true);
  });
});
