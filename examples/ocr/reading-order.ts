import type { Quad } from './min-area-rect.js';

/** Boxes whose top-left corners are closer than this vertically are on the same line (PaddleOCR's sorted_boxes). */
const SAME_LINE_PX = 10;

/**
 * Indices of `quads` in reading order, as PaddleOCR's sorted_boxes: by the top-left corner's y then
 * x, then neighbours on the same line swapped into left-to-right order.
 */
export function readingOrder(quads: readonly Quad[]): number[] {
  const order = quads.map((_, i) => i).sort((a, b) => quads[a][0][1] - quads[b][0][1] || quads[a][0][0] - quads[b][0][0]);
  for (let i = 0; i < order.length - 1; i++) {
    for (let j = i; j >= 0; j--) {
      const [upper, lower] = [quads[order[j]][0], quads[order[j + 1]][0]];
      if (Math.abs(lower[1] - upper[1]) >= SAME_LINE_PX || lower[0] >= upper[0]) break;
      [order[j], order[j + 1]] = [order[j + 1], order[j]];
    }
  }
  return order;
}
