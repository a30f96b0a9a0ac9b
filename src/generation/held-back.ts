/**
 * How many characters at the end of `text` must wait because they could be the start of one of
 * `markers` (a stop string, a `<think>` or `<tool_call>` tag) that the next delta may complete. A
 * stream that sent them at once could not take them back.
 */
export function heldBackLength(text: string, markers: readonly string[]): number {
  let held = 0;
  for (const marker of markers) {
    for (let n = Math.min(marker.length - 1, text.length); n > held; n--) {
      if (text.endsWith(marker.slice(0, n))) {
        held = n;
        break;
      }
    }
  }
  return held;
}
