import sharp from 'sharp';
import { createError } from 'serve-fn';

/** An 8-bit RGB image, rows top to bottom, pixels interleaved (`r g b r g b ...`). */
export interface RgbImage {
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array;
}

/** Larger images are refused before decoding: a 40-megapixel page is already far beyond what OCR needs. */
const MAX_PIXELS = 40_000_000;

const DATA_URL_PREFIX = /^data:image\/[\w.+-]+;base64,/;
const BASE64_BODY = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Decodes PNG, JPEG, WebP, TIFF or GIF bytes into RGB with sharp: EXIF orientation applied, and
 * transparency flattened onto white so dark text on a transparent background stays readable.
 */
export async function decodeImage(bytes: Uint8Array): Promise<RgbImage> {
  if (bytes.byteLength === 0) throw createError('SF_ERR_BAD_REQUEST', 'The image is empty (0 bytes).');
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: MAX_PIXELS, failOn: 'error' })
      .rotate()
      .flatten({ background: '#ffffff' })
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { width: info.width, height: info.height, data };
  } catch (err) {
    throw createError('SF_ERR_BAD_REQUEST', `The image could not be decoded (send PNG, JPEG, WebP, TIFF or GIF): ${(err as Error).message}`);
  }
}

/** Reads plain base64 or a `data:image/...;base64,` URL; Node's decoder skips bad characters silently, so they are checked first. */
export function decodeBase64Image(text: string): Buffer {
  const body = text.replace(DATA_URL_PREFIX, '').replace(/\s+/g, '');
  if (body.length === 0) throw createError('SF_ERR_BAD_REQUEST', 'The image is empty (0 bytes).');
  if (!BASE64_BODY.test(body)) throw createError('SF_ERR_BAD_REQUEST', 'image is not valid base64 (or a data:image/...;base64, URL).');
  return Buffer.from(body, 'base64');
}
