import type { Tensor } from 'serve-fn';
import { cropLine, REC_HEIGHT, type LineCrop } from './line-crop.js';

/** PaddleOCR pads recogniser batches to at least 320 px (its rec_image_shape 3,48,320). */
export const MIN_REC_WIDTH = 320;

/** Brings a crop of any height to the recogniser's height, keeping its aspect ratio. */
export function toRecHeight(crop: LineCrop): LineCrop {
  if (crop.height === REC_HEIGHT) return crop;
  const { width: w, height: h } = crop;
  return cropLine({ width: w, height: h, data: crop.pixels }, [[0, 0], [w, 0], [w, h], [0, h]]);
}

/**
 * Packs crops of height 48 into one NCHW float tensor, each normalised to [-1, 1] with PaddleOCR's
 * BGR channel order and zero-padded on the right to the widest crop (at least 320 px).
 */
export function prepareRecBatch(crops: readonly LineCrop[]): Tensor {
  const width = Math.max(MIN_REC_WIDTH, ...crops.map((c) => c.width));
  const plane = REC_HEIGHT * width;
  const data = new Float32Array(crops.length * 3 * plane);
  crops.forEach((crop, n) => {
    if (crop.height !== REC_HEIGHT) throw new Error(`crop ${n} is ${crop.height} px high; bring it to ${REC_HEIGHT} first`);
    for (let y = 0; y < REC_HEIGHT; y++) {
      for (let x = 0; x < crop.width; x++) {
        const src = (y * crop.width + x) * 3;
        const dst = n * 3 * plane + y * width + x;
        for (let c = 0; c < 3; c++) data[dst + c * plane] = crop.pixels[src + 2 - c] / 127.5 - 1;
      }
    }
  });
  return { name: 'x', datatype: 'FP32', shape: [crops.length, 3, REC_HEIGHT, width], data };
}
