import { growRect, minAreaRect, type Point, type Quad } from './min-area-rect.js';

/** PaddleOCR's DBPostProcess settings for PP-OCRv4 detection. */
export interface DbOptions {
  /** Probability above which a map pixel is text. */
  readonly threshold: number;
  /** Mean probability inside a box below which the box is dropped. */
  readonly boxThreshold: number;
  /** How far boxes grow back out: the network predicts shrunk text kernels. */
  readonly unclipRatio: number;
  readonly maxCandidates: number;
  /** Boxes whose shorter side is below this (in map pixels) are noise. */
  readonly minSize: number;
}

export const DEFAULT_DB_OPTIONS: DbOptions = { threshold: 0.3, boxThreshold: 0.6, unclipRatio: 1.5, maxCandidates: 1000, minSize: 3 };

export interface ProbabilityMap {
  readonly data: Float32Array;
  readonly width: number;
  readonly height: number;
}

export interface TextBox {
  /** Corners in the original image's pixels, clockwise from the top-left. */
  readonly quad: Quad;
  /** Mean text probability inside the detected box. */
  readonly score: number;
}

/**
 * Turns the detector's probability map into text boxes (Differentiable Binarization post-processing):
 * threshold, 8-connected regions, minimum-area rectangle, score, unclip, scale to the image.
 * The region labelling is written out because no connected-components package is installed; it
 * is one flood fill.
 */
export function boxesFromProbabilityMap(map: ProbabilityMap, imageWidth: number, imageHeight: number, options: DbOptions = DEFAULT_DB_OPTIONS): TextBox[] {
  const boxes: TextBox[] = [];
  for (const outline of regionOutlines(map, options.threshold).slice(0, options.maxCandidates)) {
    const rect = minAreaRect(outline);
    if (Math.min(rect.width, rect.height) < options.minSize) continue;
    const score = meanInside(map, rect.corners);
    if (score < options.boxThreshold) continue;
    const area = rect.width * rect.height;
    const perimeter = 2 * (rect.width + rect.height);
    const grown = growRect(rect, (area * options.unclipRatio) / perimeter);
    if (Math.min(grown.width, grown.height) < options.minSize + 2) continue;
    const scale = (p: Point): Point => [
      clamp(Math.round((p[0] / map.width) * imageWidth), 0, imageWidth),
      clamp(Math.round((p[1] / map.height) * imageHeight), 0, imageHeight),
    ];
    boxes.push({ quad: grown.corners.map(scale) as unknown as Quad, score });
  }
  return boxes;
}

/**
 * The 8-connected regions of pixels above `threshold`, each reduced to its leftmost and rightmost
 * pixel per row: enough for the convex hull, and far fewer points than the whole region.
 */
export function regionOutlines(map: ProbabilityMap, threshold: number): Point[][] {
  const { width, height, data } = map;
  const seen = new Uint8Array(width * height);
  const stack = new Int32Array(width * height);
  const outlines: Point[][] = [];
  for (let start = 0; start < data.length; start++) {
    if (seen[start] || data[start] <= threshold) continue;
    const rowMin = new Map<number, number>();
    const rowMax = new Map<number, number>();
    let top = 0;
    stack[top++] = start;
    seen[start] = 1;
    while (top > 0) {
      const at = stack[--top];
      const x = at % width;
      const y = (at - x) / width;
      if (!(rowMin.get(y)! <= x)) rowMin.set(y, x);
      if (!(rowMax.get(y)! >= x)) rowMax.set(y, x);
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          const next = ny * width + nx;
          if (nx < 0 || nx >= width || seen[next] || data[next] <= threshold) continue;
          seen[next] = 1;
          stack[top++] = next;
        }
      }
    }
    const outline: Point[] = [];
    for (const [y, x0] of rowMin) outline.push([x0, y], [rowMax.get(y)!, y]);
    outlines.push(outline);
  }
  return outlines;
}

/** Mean map value over the pixels whose centres lie inside the convex quad (PaddleOCR's "fast" box score). */
export function meanInside(map: ProbabilityMap, quad: Quad): number {
  const xs = quad.map((p) => p[0]);
  const ys = quad.map((p) => p[1]);
  const x0 = clamp(Math.floor(Math.min(...xs)), 0, map.width - 1);
  const x1 = clamp(Math.ceil(Math.max(...xs)), 0, map.width - 1);
  const y0 = clamp(Math.floor(Math.min(...ys)), 0, map.height - 1);
  const y1 = clamp(Math.ceil(Math.max(...ys)), 0, map.height - 1);
  let sum = 0;
  let count = 0;
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      if (!insideConvex(quad, x, y)) continue;
      sum += map.data[y * map.width + x];
      count++;
    }
  }
  return count > 0 ? sum / count : 0;
}

function insideConvex(quad: Quad, x: number, y: number): boolean {
  let sign = 0;
  for (let i = 0; i < 4; i++) {
    const [ax, ay] = quad[i];
    const [bx, by] = quad[(i + 1) % 4];
    const side = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
    if (Math.abs(side) < 1e-9) continue;
    if (sign === 0) sign = Math.sign(side);
    else if (Math.sign(side) !== sign) return false;
  }
  return true;
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}
