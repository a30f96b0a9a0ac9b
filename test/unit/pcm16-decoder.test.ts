import { describe, expect, it } from 'vitest';
import { Pcm16Decoder } from '../../src/adapters/funasr/pcm16-decoder.js';

describe('Pcm16Decoder', () => {
  it('reads signed 16-bit little-endian samples into [-1, 1)', () => {
    // 0x8000 = -32768, 0x7fff = 32767, 0x0100 = 256 (little-endian byte order), 0xffff = -1.
    const samples = new Pcm16Decoder().decode(Uint8Array.of(0x00, 0x80, 0xff, 0x7f, 0x00, 0x01, 0xff, 0xff));
    expect(Array.from(samples)).toEqual([-1, 32767 / 32768, 256 / 32768, -1 / 32768]);
  });

  it('keeps the odd byte of a frame for the next one', () => {
    const decoder = new Pcm16Decoder();
    expect(Array.from(decoder.decode(Uint8Array.of(0x00, 0x40, 0x00)))).toEqual([0.5]);
    expect(Array.from(decoder.decode(Uint8Array.of(0xc0)))).toEqual([-0.5]);
    expect(Array.from(decoder.decode(Uint8Array.of(0x01)))).toEqual([]);
    expect(Array.from(decoder.decode(Uint8Array.of(0x00, 0x02, 0x00)))).toEqual([1 / 32768, 2 / 32768]);
  });

  it('reads a frame that is a view into a larger buffer at an odd offset', () => {
    const buffer = Uint8Array.of(0xaa, 0x00, 0x20, 0xbb);
    expect(Array.from(new Pcm16Decoder().decode(buffer.subarray(1, 3)))).toEqual([0.25]);
  });
});
