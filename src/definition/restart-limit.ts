import { parseCountPerWindow } from '../validation/count-per-window.js';
import type { RestartPolicy } from '../spec/restart-policy.js';

/** How a restart limit is written (--restart-limit, SERVE_FN_RESTART_LIMIT, a model's `restart_limit` parameter). */
export const RESTART_LIMIT_FORM = "'<restarts>/<window>' with a window in ms, s, m or h, such as '5/60s' (0 restarts: an instance that dies stays down for the window)";

/** `<restarts>/<window>`, as SERVE_FN_RATE_LIMIT is written; undefined when malformed. */
export function parseRestartLimit(text: string): RestartPolicy | undefined {
  const parsed = parseCountPerWindow(text);
  return parsed && { maxRestarts: parsed.count, windowMs: parsed.windowMs };
}
