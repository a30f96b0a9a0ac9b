/**
 * Minimum-area rectangles around point sets, as OpenCV's minAreaRect computes them. No maintained
 * geometry package is installed and OpenCV bindings are a large native dependency for two
 * functions, so this is written out: a monotone-chain convex hull and a scan over the hull's edges
 * (the smallest enclosing rectangle has one side on a hull edge).
 */

export type Point = readonly [number, number];
/** Corners clockwise from the top-left (image coordinates, y down): [tl, tr, br, bl]. */
export type Quad = readonly [Point, Point, Point, Point];

export interface RotatedRect {
  readonly corners: Quad;
  /** Length of the side from corners[0] to corners[1]. */
  readonly width: number;
  /** Length of the side from corners[1] to corners[2]. */
  readonly height: number;
}

function cross(o: Point, a: Point, b: Point): number {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

export function convexHull(points: readonly Point[]): Point[] {
  const sorted = [...points].sort((p, q) => p[0] - q[0] || p[1] - q[1]);
  if (sorted.length < 3) return sorted;
  const half = (list: Point[]): Point[] => {
    const chain: Point[] = [];
    for (const p of list) {
      while (chain.length >= 2 && cross(chain[chain.length - 2], chain[chain.length - 1], p) <= 0) chain.pop();
      chain.push(p);
    }
    chain.pop();
    return chain;
  };
  return [...half(sorted), ...half(sorted.reverse())];
}

/** Orders four corners as PaddleOCR's get_mini_boxes does: the two leftmost give tl/bl by y, the others tr/br. */
export function orderQuad(corners: readonly Point[]): Quad {
  const byX = [...corners].sort((p, q) => p[0] - q[0] || p[1] - q[1]);
  const [tl, bl] = byX[0][1] <= byX[1][1] ? [byX[0], byX[1]] : [byX[1], byX[0]];
  const [tr, br] = byX[2][1] <= byX[3][1] ? [byX[2], byX[3]] : [byX[3], byX[2]];
  return [tl, tr, br, bl];
}

function rectFrom(corners: readonly Point[]): RotatedRect {
  const quad = orderQuad(corners);
  const dist = (a: Point, b: Point): number => Math.hypot(a[0] - b[0], a[1] - b[1]);
  return { corners: quad, width: dist(quad[0], quad[1]), height: dist(quad[1], quad[2]) };
}

export function minAreaRect(points: readonly Point[]): RotatedRect {
  const hull = convexHull(points);
  if (hull.length < 3) {
    const xs = points.map((p) => p[0]);
    const ys = points.map((p) => p[1]);
    const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    return rectFrom([[x0, y0], [x1, y0], [x1, y1], [x0, y1]]);
  }
  let best: { area: number; corners: Point[] } | undefined;
  for (let i = 0; i < hull.length; i++) {
    const a = hull[i];
    const b = hull[(i + 1) % hull.length];
    const len = Math.hypot(b[0] - a[0], b[1] - a[1]);
    const u: Point = [(b[0] - a[0]) / len, (b[1] - a[1]) / len];
    const n: Point = [-u[1], u[0]];
    let [minU, maxU, minN, maxN] = [Infinity, -Infinity, Infinity, -Infinity];
    for (const p of hull) {
      const du = (p[0] - a[0]) * u[0] + (p[1] - a[1]) * u[1];
      const dn = (p[0] - a[0]) * n[0] + (p[1] - a[1]) * n[1];
      [minU, maxU, minN, maxN] = [Math.min(minU, du), Math.max(maxU, du), Math.min(minN, dn), Math.max(maxN, dn)];
    }
    const area = (maxU - minU) * (maxN - minN);
    if (best && area >= best.area) continue;
    const at = (su: number, sn: number): Point => [a[0] + u[0] * su + n[0] * sn, a[1] + u[1] * su + n[1] * sn];
    best = { area, corners: [at(minU, minN), at(maxU, minN), at(maxU, maxN), at(minU, maxN)] };
  }
  return rectFrom(best!.corners);
}

/**
 * Grows a rectangle by `distance` on every side. DB's unclip offsets the polygon with round joins
 * (pyclipper) and takes the minimum-area rectangle of the result; for a rectangle that is exactly
 * this, since the rounded corners stay inside the grown rectangle.
 */
export function growRect(rect: RotatedRect, distance: number): RotatedRect {
  const [tl, tr, , bl] = rect.corners;
  const unit = (from: Point, to: Point, len: number, axis: Point): Point => (len > 0 ? [(to[0] - from[0]) / len, (to[1] - from[1]) / len] : axis);
  const u = unit(tl, tr, rect.width, [1, 0]);
  const v = unit(tl, bl, rect.height, [0, 1]);
  const move = (p: Point, su: number, sv: number): Point => [p[0] + u[0] * su + v[0] * sv, p[1] + u[1] * su + v[1] * sv];
  const [w, h] = [rect.width + 2 * distance, rect.height + 2 * distance];
  const origin = move(tl, -distance, -distance);
  return rectFrom([origin, move(origin, w, 0), move(origin, w, h), move(origin, 0, h)]);
}
