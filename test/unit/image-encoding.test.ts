import { describe, expect, it, vi } from 'vitest';
import { encodeImage } from '../../src/diffusion/image-encoding.js';

// sharp absent, as in a project that did not install the optional peer dependency.
vi.mock('sharp', () => {
  throw new Error("Cannot find package 'sharp'");
});

describe('encodeImage without sharp', () => {
  it('fails with SF_ERR_IMAGE_ENCODER_MISSING naming the install step, and tries again on the next request', async () => {
    const image = { width: 1, height: 1, rgb: new Uint8Array(3) };
    for (let i = 0; i < 2; i++) {
      await expect(encodeImage(image, 'webp')).rejects.toMatchObject({ code: 'SF_ERR_IMAGE_ENCODER_MISSING', message: expect.stringContaining('npm install sharp@0.35.5') });
    }
  });
});
