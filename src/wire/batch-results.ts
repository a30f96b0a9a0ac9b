import { createError } from '../errors/index.js';

/**
 * The contract of every batched call, a decorated @Batch method, a tensor model's
 * execute(requests) and the batcher's own executors alike: one result (or Error) per request, in
 * order, as Triton's Python backend requires one response per request. Returns `output` as that list.
 */
export function oneResultPerRequest(owner: string, output: unknown, expected: number): unknown[] {
  if (!Array.isArray(output)) throw createError('SF_ERR_BATCH_RESULT_NOT_ARRAY', owner, describeValue(output));
  if (output.length !== expected) throw createError('SF_ERR_BATCH_RESULT_LENGTH', owner, output.length, expected);
  return output;
}

/** Names what a method returned, for an error message: its class, or its type. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  return typeof value === 'object' ? (value.constructor?.name ?? 'object') : typeof value;
}
