const WINDOW_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Reads `<count>/<window>` with a window in ms, s, m or h (`100/60s`), the form of every "so many
 * per time window" setting (SERVE_FN_RATE_LIMIT, the restart limit). Undefined when malformed, or
 * when the window is empty; what count is acceptable is the caller's to say.
 */
export function parseCountPerWindow(text: string): { readonly count: number; readonly windowMs: number } | undefined {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*(ms|s|m|h)\s*$/.exec(text);
  if (!match) return undefined;
  const count = Number(match[1]);
  const windowMs = Number(match[2]) * WINDOW_UNITS[match[3]];
  if (windowMs < 1 || !Number.isSafeInteger(count) || !Number.isSafeInteger(windowMs)) return undefined;
  return { count, windowMs };
}
