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
 * The formats read, by sharp's name for them. Vector and document formats are refused before
 * anything is decoded: sharp renders SVG, and a few hundred bytes of filters keep an instance busy
 * for half a minute; limitInputPixels only bounds the canvas, not the work of drawing on it.
 */
const RASTER_FORMATS: ReadonlySet<string> = new Set(['png', 'jpeg', 'webp', 'tiff', 'gif']);
const ACCEPTED = 'PNG, JPEG, WebP, TIFF or GIF';
const MIME_TYPES: Readonly<Record<string, string>> = { svg: 'image/svg+xml', pdf: 'application/pdf', heif: 'image/heif' };

/**
 * Decodes PNG, JPEG, WebP, TIFF or GIF bytes into RGB with sharp: EXIF orientation applied, and
 * transparency flattened onto white so dark text on a transparent background stays readable. The
 * format is read from the bytes' header first, whatever the upload said it was; another format is
 * a 415.
 */
export async function decodeImage(bytes: Uint8Array): Promise<RgbImage> {
  if (bytes.byteLength === 0) throw createError('SF_ERR_BAD_REQUEST', 'The image is empty (0 bytes).');
  const options = { limitInputPixels: MAX_PIXELS, failOn: 'error' } as const;
  const format = await sharp(bytes, options).metadata().then((m) => m.format, (err: Error) => {
    throw createError('SF_ERR_BAD_REQUEST', `The image could not be decoded (send ${ACCEPTED}): ${err.message}`);
  });
  if (!RASTER_FORMATS.has(format)) throw createError('SF_ERR_UNSUPPORTED_MEDIA_TYPE', MIME_TYPES[format] ?? `image/${format}`, 'OCR', ACCEPTED);
  try {
    const { data, info } = await sharp(bytes, options)
      .rotate()
      .flatten({ background: '#ffffff' })
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { width: info.width, height: info.height, data };
  } catch (err) {
    throw createError('SF_ERR_BAD_REQUEST', `The image could not be decoded (send ${ACCEPTED}): ${(err as Error).message}`);
  }
}

/** Reads plain base64 or a `data:image/...;base64,` URL; Node's decoder skips bad characters silently, so they are checked first. */
export function decodeBase64Image(text: string): Buffer {
  const body = text.replace(DATA_URL_PREFIX, '').replace(/\s+/g, '');
  if (body.length === 0) throw createError('SF_ERR_BAD_REQUEST', 'The image is empty (0 bytes).');
  if (!BASE64_BODY.test(body)) throw createError('SF_ERR_BAD_REQUEST', 'image is not valid base64 (or a data:image/...;base64, URL).');
  return Buffer.from(body, 'base64');
}
