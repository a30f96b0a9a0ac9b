import { createRequire } from 'node:module';
import { createError } from '../errors/index.js';
import type { DecodedImage } from './diffusion-pipeline.js';

export const IMAGE_FORMATS = ['png', 'jpeg', 'webp'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

type SharpModule = (typeof import('sharp'))['default'];
let loaded: Promise<SharpModule> | undefined;

/**
 * sharp (libvips) is an optional peer dependency loaded on first use, as onnxruntime-node is
 * (docs/install.md): most servers encode no images, and its native library is large. Missing, an image request fails with
 * SF_ERR_IMAGE_ENCODER_MISSING naming the install step.
 */
function loadSharp(format: ImageFormat): Promise<SharpModule> {
  loaded ??= import('sharp').then((m) => m.default);
  return loaded.catch((cause: unknown) => {
    loaded = undefined;
    const version = (createRequire(import.meta.url)('../../package.json') as { peerDependencies: Record<string, string> }).peerDependencies.sharp;
    throw createError('SF_ERR_IMAGE_ENCODER_MISSING', format, (cause as Error).message, version, { cause });
  });
}

/**
 * Encodes RGB pixels as OpenAI's `output_format`s: PNG (lossless; `output_compression` is zlib's
 * level, 0–100 mapped onto 0–9), JPEG and WebP (`output_compression` is what OpenAI calls it, the
 * lossy quality: 100 − compression, default 100 → quality 100 as gpt-image's default is).
 */
export async function encodeImage(image: DecodedImage, format: ImageFormat, compression?: number): Promise<Buffer> {
  const sharp = await loadSharp(format);
  const raw = sharp(Buffer.from(image.rgb.buffer, image.rgb.byteOffset, image.rgb.byteLength), { raw: { width: image.width, height: image.height, channels: 3 } });
  if (format === 'png') return raw.png({ compressionLevel: compression === undefined ? 6 : Math.round((compression / 100) * 9) }).toBuffer();
  const quality = Math.max(1, 100 - (compression ?? 0));
  return format === 'jpeg' ? raw.jpeg({ quality }).toBuffer() : raw.webp({ quality }).toBuffer();
}
