import sharp from 'sharp';
import type { Tensor } from 'serve-fn';
import type { RgbImage } from './image-decoder.js';

/** PaddleOCR's DetResizeForTest defaults: the longer side at most 960 px, both sides multiples of 32. */
export const DET_LIMIT_SIDE = 960;
const DET_STRIDE = 32;

/** ImageNet statistics, applied in PaddleOCR's channel order (it reads images as BGR with OpenCV). */
const MEAN_BGR = [0.485, 0.456, 0.406] as const;
const STD_BGR = [0.229, 0.224, 0.225] as const;

export interface DetInput {
  readonly tensor: Tensor;
  /** Size of the probability map the detector returns (the resized image). */
  readonly mapWidth: number;
  readonly mapHeight: number;
}

/** Size the detector sees: scaled down so the longer side fits the limit, rounded to the network's stride. */
export function detInputSize(width: number, height: number, limitSide = DET_LIMIT_SIDE): { width: number; height: number } {
  const ratio = Math.max(width, height) > limitSide ? limitSide / Math.max(width, height) : 1;
  const round = (v: number): number => Math.max(Math.round((v * ratio) / DET_STRIDE) * DET_STRIDE, DET_STRIDE);
  return { width: round(width), height: round(height) };
}

/** Resizes (sharp, linear kernel like PaddleOCR's cv2.INTER_LINEAR) and normalises into an NCHW BGR float tensor. */
export async function prepareDetInput(image: RgbImage, limitSide = DET_LIMIT_SIDE): Promise<DetInput> {
  const size = detInputSize(image.width, image.height, limitSide);
  const resized = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
    .resize(size.width, size.height, { fit: 'fill', kernel: 'linear' })
    .raw()
    .toBuffer();
  const plane = size.width * size.height;
  const data = new Float32Array(3 * plane);
  for (let p = 0; p < plane; p++) {
    for (let c = 0; c < 3; c++) {
      const rgbChannel = 2 - c;
      data[c * plane + p] = (resized[p * 3 + rgbChannel] / 255 - MEAN_BGR[c]) / STD_BGR[c];
    }
  }
  return {
    tensor: { name: 'x', datatype: 'FP32', shape: [1, 3, size.height, size.width], data },
    mapWidth: size.width,
    mapHeight: size.height,
  };
}
