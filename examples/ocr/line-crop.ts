import type { RgbImage } from './image-decoder.js';
import type { Point, Quad } from './min-area-rect.js';

/** The recogniser's input height (PP-OCRv4 rec: 3 x 48 x W). */
export const REC_HEIGHT = 48;
/** Lines longer than 64 heights are squeezed: the recogniser's memory grows with width. */
export const MAX_CROP_WIDTH = REC_HEIGHT * 64;

/** One text line as the recogniser takes it: 8-bit RGB, interleaved, `height` rows of `width` pixels. */
export interface LineCrop {
  readonly width: number;
  readonly height: number;
  readonly pixels: Uint8Array;
}

const dist = (a: Point, b: Point): number => Math.hypot(a[0] - b[0], a[1] - b[1]);

/**
 * Cuts a text box out of the image, straightened and scaled to the recogniser's height in one
 * bilinear pass (PaddleOCR warps to the box's own size, then resizes to height 48). Boxes at least
 * 1.5 times taller than wide are read as vertical lines, turned a quarter counter-clockwise as
 * PaddleOCR's np.rot90 does. Samples outside the image repeat the edge (OpenCV's BORDER_REPLICATE).
 */
export function cropLine(image: RgbImage, quad: Quad, height = REC_HEIGHT): LineCrop {
  const [tl, tr, br, bl] = quad;
  const boxWidth = Math.max(dist(tl, tr), dist(bl, br));
  const boxHeight = Math.max(dist(tl, bl), dist(tr, br));
  const vertical = boxHeight / Math.max(boxWidth, 1) >= 1.5;
  const [p00, p10, p11, p01] = vertical ? [tr, br, bl, tl] : [tl, tr, br, bl];
  const aspect = vertical ? boxHeight / Math.max(boxWidth, 1) : boxWidth / Math.max(boxHeight, 1);
  const width = Math.min(MAX_CROP_WIDTH, Math.max(1, Math.ceil(height * aspect)));
  const pixels = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const v = (y + 0.5) / height;
    for (let x = 0; x < width; x++) {
      const u = (x + 0.5) / width;
      // Bilinear blend of the four corners: exact for rectangles, a close stand-in for a perspective warp otherwise.
      const sx = (1 - v) * ((1 - u) * p00[0] + u * p10[0]) + v * ((1 - u) * p01[0] + u * p11[0]);
      const sy = (1 - v) * ((1 - u) * p00[1] + u * p10[1]) + v * ((1 - u) * p01[1] + u * p11[1]);
      sampleInto(image, sx - 0.5, sy - 0.5, pixels, (y * width + x) * 3);
    }
  }
  return { width, height, pixels };
}

function sampleInto(image: RgbImage, fx: number, fy: number, out: Uint8Array, at: number): void {
  const x0 = Math.floor(fx);
  const y0 = Math.floor(fy);
  const ax = fx - x0;
  const ay = fy - y0;
  const cx0 = clampIndex(x0, image.width);
  const cx1 = clampIndex(x0 + 1, image.width);
  const cy0 = clampIndex(y0, image.height);
  const cy1 = clampIndex(y0 + 1, image.height);
  const d = image.data;
  for (let c = 0; c < 3; c++) {
    const top = d[(cy0 * image.width + cx0) * 3 + c] * (1 - ax) + d[(cy0 * image.width + cx1) * 3 + c] * ax;
    const bottom = d[(cy1 * image.width + cx0) * 3 + c] * (1 - ax) + d[(cy1 * image.width + cx1) * 3 + c] * ax;
    out[at + c] = Math.round(top * (1 - ay) + bottom * ay);
  }
}

function clampIndex(i: number, size: number): number {
  return i < 0 ? 0 : i >= size ? size - 1 : i;
}
