/**
 * Turns binary frames of 16-bit little-endian PCM into samples in [-1, 1]. A frame may end in the
 * middle of a sample (WebSocket clients split the stream wherever they like); the odd byte is kept
 * for the next frame.
 */
export class Pcm16Decoder {
  #carry: number | undefined;

  decode(frame: Uint8Array): Float32Array {
    const bytes = this.#carry === undefined ? frame : prepend(this.#carry, frame);
    const count = bytes.length >> 1;
    this.#carry = bytes.length % 2 === 1 ? bytes[bytes.length - 1] : undefined;
    const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
    const samples = new Float32Array(count);
    for (let i = 0; i < count; i++) samples[i] = view.getInt16(2 * i, true) / 32768;
    return samples;
  }
}

function prepend(byte: number, frame: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(frame.length + 1);
  bytes[0] = byte;
  bytes.set(frame, 1);
  return bytes;
}
