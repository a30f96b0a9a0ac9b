import { createError } from '../errors/index.js';

/**
 * How deeply a request's JSON may nest arrays and objects. JSON.parse reads any depth, but what
 * walks the value afterwards (class-transformer, class-validator, tensor flattening, JSON.stringify)
 * recurses and overflows the stack near 10,000 levels. 128 is serde_json's recursion limit: far
 * above any tensor rank or DTO nesting, far below the stack.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Whether a parsed JSON value nests deeper than `limit`. Hand-written because the check must not
 * recurse itself: it walks with an explicit stack.
 */
export function jsonDepthExceeds(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  if (value === null || typeof value !== 'object') return false;
  const pending: [object, number][] = [[value, 1]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (depth > limit) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') pending.push([child, depth + 1]);
    }
  }
  return false;
}

/** Throws SF_ERR_BODY_TOO_DEEP (400) for a parsed body nested deeper than {@link MAX_JSON_DEPTH}. */
export function checkJsonDepth(value: unknown): void {
  if (jsonDepthExceeds(value)) throw createError('SF_ERR_BODY_TOO_DEEP', MAX_JSON_DEPTH);
}
