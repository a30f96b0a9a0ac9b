import { describe, expect, it } from 'vitest';
import { DEFAULT_VAD_OPTIONS, FsmnVadStateMachine, vadOptions, type VadBoundary, type VadOptions } from '../../../src/speech/fsmn-vad-state-machine.js';

const SILENCE = 0.95;
const SPEECH = 0.05;

/** Per-frame silence probabilities from runs of [frames, probability]; every frame at a loud 0 dB. */
function frames(runs: readonly [number, number][]): number[] {
  return runs.flatMap(([n, p]) => new Array<number>(n).fill(p));
}

function run(probs: readonly number[], options: VadOptions = DEFAULT_VAD_OPTIONS): { segments: [number, number][]; boundaries: { boundary: VadBoundary; atFrame: number }[] } {
  const machine = new FsmnVadStateMachine(options);
  const boundaries: { boundary: VadBoundary; atFrame: number }[] = [];
  probs.forEach((p, t) => {
    const found = t === probs.length - 1 ? machine.finish(p, 0) : machine.frame(p, 0);
    boundaries.push(...found.map((boundary) => ({ boundary, atFrame: t })));
  });
  return { segments: machine.segments(), boundaries };
}

// The expected segments were worked out by hand from e2e_vad.py's rules (200 ms window, 150 ms thresholds,
// 200 ms look-back, 800 − 150 ms end silence less the 100 ms look-ahead), and agree with FunASR's E2EVadModel run on the same frames.
describe('FunASR FSMN-VAD state machine', () => {
  it('opens a segment 400 ms before the window confirms speech and closes it 650 ms into the silence, less the look-ahead', () => {
    const { segments, boundaries } = run(frames([[100, SILENCE], [100, SPEECH], [100, SILENCE]]));
    expect(segments).toEqual([[740, 2160]]);
    // Online: the start as soon as frame 114 fills the window, the end at frame 269 (65 frames of silence after the change).
    expect(boundaries).toEqual([{ boundary: { kind: 'start', ms: 740 }, atFrame: 114 }, { boundary: { kind: 'end', ms: 2160 }, atFrame: 269 }]);
  });

  it('cuts a segment at max_single_segment_time, and the next one starts where it ended', () => {
    const options = vadOptions({ max_single_segment_time: 1000 });
    expect(run(frames([[100, SILENCE], [250, SPEECH], [100, SILENCE]]), options).segments).toEqual([[740, 1750], [1750, 2760], [2760, 3770]]);
  });

  it('keeps a short pause inside a segment, and closes a segment still open at the last frame there', () => {
    const { segments } = run(frames([[100, SILENCE], [100, SPEECH], [30, SILENCE], [50, SPEECH], [120, SILENCE], [40, SPEECH]]));
    expect(segments).toEqual([[740, 2960], [3740, 4400]]);
  });

  it('finds nothing in silence, and a frame is speech only when 1 − silence clears silence + speech_noise_thres', () => {
    expect(run(frames([[300, SILENCE]])).segments).toEqual([]);
    // 1 − 0.25 = 0.75 < 0.25 + 0.6: not speech under the template's threshold, speech under 0.4.
    expect(run(frames([[100, SILENCE], [100, 0.25], [100, SILENCE]])).segments).toEqual([]);
    expect(run(frames([[100, SILENCE], [100, 0.25], [100, SILENCE]]), vadOptions({ speech_noise_thres: 0.4 })).segments).toEqual([[740, 2160]]);
  });

  it('reads max_end_silence_time from model_conf: a shorter end silence splits at a shorter pause', () => {
    const probs = frames([[100, SILENCE], [100, SPEECH], [40, SILENCE], [100, SPEECH], [100, SILENCE]]);
    expect(run(probs).segments).toHaveLength(1);
    expect(run(probs, vadOptions({ max_end_silence_time: 300 })).segments).toEqual([[740, 2160], [2160, 3560]]);
  });

  it('treats frames under decibel_thres as silence', () => {
    const machine = new FsmnVadStateMachine(vadOptions({ decibel_thres: -50 }));
    const probs = frames([[100, SILENCE], [100, SPEECH], [100, SILENCE]]);
    probs.forEach((p, t) => (t === probs.length - 1 ? machine.finish(p, -60) : machine.frame(p, -60)));
    expect(machine.segments()).toEqual([]);
  });
});
