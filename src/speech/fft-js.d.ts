// fft.js 4.0.4 ships no types; the part of its API the fbank uses.
declare module 'fft.js' {
  export default class FFT {
    constructor(size: number);
    createComplexArray(): number[];
    /** Fills `out` (interleaved re/im) with the spectrum of the real `input`, up to and including the Nyquist bin. */
    realTransform(out: number[], input: ArrayLike<number>): void;
  }
}
