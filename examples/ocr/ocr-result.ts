import type { RecognizedText } from './ctc-decoder.js';
import type { TextBox } from './db-postprocess.js';
import { readingOrder } from './reading-order.js';

/** Lines read with less confidence than this are dropped (PaddleOCR's drop_score). */
export const DROP_SCORE = 0.5;

export interface OcrLine {
  readonly text: string;
  /** Recognition confidence, 0 to 1. */
  readonly score: number;
  /** Detection confidence, 0 to 1. */
  readonly box_score: number;
  /** Corners [x, y] in the image's pixels, clockwise from the top-left. */
  readonly box: number[][];
}

export interface OcrResult {
  readonly width: number;
  readonly height: number;
  readonly lines: OcrLine[];
}

/** Joins boxes and their recognised text: confident lines only, in reading order. */
export function assembleOcrResult(width: number, height: number, boxes: readonly TextBox[], texts: readonly RecognizedText[]): OcrResult {
  const lines = readingOrder(boxes.map((b) => b.quad))
    .filter((i) => texts[i].score >= DROP_SCORE && texts[i].text.trim() !== '')
    .map((i) => ({
      text: texts[i].text.trim(),
      score: round(texts[i].score),
      box_score: round(boxes[i].score),
      box: boxes[i].quad.map(([x, y]) => [x, y]),
    }));
  return { width, height, lines };
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
