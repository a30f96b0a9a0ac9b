import { FUNASR_SAMPLE_RATE, type FunAsrRecognizer, type RecognizeOptions, type RecognitionResult } from 'serve-fn';

/**
 * Not a speech recognizer: no ASR model ships with this repository, so instead of words it reports
 * what the adapter handed over, which makes the protocol's bookkeeping visible end to end:
 * `[speech 0.50–3.55 s, -23 dBFS]` for a VAD segment (offline pass), `[chunk 0.50–1.10 s, -25 dBFS]`
 * for a streamed chunk (online pass). Swap it for a real model (README.md) to get text.
 */
export class SegmentFactsRecognizer implements FunAsrRecognizer {
  async recognize(audio: Float32Array, options: RecognizeOptions): Promise<RecognitionResult> {
    if (audio.length === 0) return { text: '' };
    const from = options.startMs / 1000;
    const to = from + audio.length / FUNASR_SAMPLE_RATE;
    const label = options.pass === 'offline' ? 'speech' : 'chunk';
    return { text: `[${label} ${from.toFixed(2)}–${to.toFixed(2)} s, ${loudness(audio)}]` };
  }
}

/** RMS level relative to a full-scale square wave, rounded to whole dB. */
function loudness(audio: Float32Array): string {
  let sum = 0;
  for (const s of audio) sum += s * s;
  const rms = Math.sqrt(sum / audio.length);
  return rms === 0 ? 'digital silence' : `${Math.round(20 * Math.log10(rms))} dBFS`;
}
