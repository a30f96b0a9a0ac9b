import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeAudioFile } from '../../../src/speech/audio-input.js';
import { parseAmMvn } from '../../../src/speech/cmvn.js';
import { KaldiFbank } from '../../../src/speech/kaldi-fbank.js';
import { resample } from '../../../src/speech/resample.js';
import { stackLowFrameRate } from '../../../src/speech/low-frame-rate.js';
import { SpeechFrontEnd, DEFAULT_FRONT_END } from '../../../src/speech/speech-front-end.js';
import { amMvnText, missingPython, SPEECH_PYTHON } from '../../helpers/speech-python.js';

const REFERENCE = new URL('../../fixtures/speech/front-end-reference.py', import.meta.url).pathname;
/** Real recorded speech from Debian's pocketsphinx-testdata (16 kHz mono). */
const SPEECH_WAV = '/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav';
const noTorch = missingPython(['torch', 'torchaudio', 'numpy']) ?? (existsSync(SPEECH_WAV) ? undefined : `${SPEECH_WAV} is missing (apt-get install pocketsphinx-testdata)`);

function readF32(file: string): Float32Array {
  const bytes = readFileSync(file);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

describe.skipIf(noTorch)(`speech front end against torchaudio and FunASR's numpy front end${noTorch ? ` (skipped: ${noTorch})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-front-end-'));

  it("computes torchaudio.compliance.kaldi.fbank's features of recorded speech to 1e-4", () => {
    execFileSync(SPEECH_PYTHON, [REFERENCE, 'fbank', SPEECH_WAV, join(dir, 'fbank.f32')]);
    const expected = readF32(join(dir, 'fbank.f32'));
    const audio = decodeAudioFile(readFileSync(SPEECH_WAV));
    const scaled = audio.samples.map((s) => s * 32768);
    const ours = new KaldiFbank().compute(scaled);
    expect(ours.length / 80).toBeGreaterThan(200);
    expect(maxAbsDiff(ours, expected)).toBeLessThan(1e-4);
  });

  it.each([[44100, 16000], [8000, 16000], [48000, 16000], [22050, 16000]])('resamples %i Hz to %i Hz as torchaudio.functional.resample does', (from, to) => {
    const input = Float32Array.from({ length: Math.round(from * 0.7) }, (_, i) => 0.3 * Math.sin(i * 0.05) + 0.2 * Math.sin(i * 1.3) + ((i * 7919) % 101) / 1000);
    writeFileSync(join(dir, 'wave.f32'), input);
    execFileSync(SPEECH_PYTHON, [REFERENCE, 'resample', join(dir, 'wave.f32'), String(from), String(to), join(dir, 'resampled.f32')]);
    expect(maxAbsDiff(resample(input, from, to), readF32(join(dir, 'resampled.f32')))).toBeLessThan(1e-5);
  });

  it('stacks low frame rate frames and applies am.mvn as funasr_onnx does, for lengths that do and do not fill the last stack', () => {
    for (const frames of [1, 5, 6, 7, 12, 13, 100]) {
      const feats = Float32Array.from({ length: frames * 80 }, (_, i) => Math.sin(i * 0.37) * 5 + (i % 80));
      writeFileSync(join(dir, 'in.f32'), feats);
      const shift = Float32Array.from({ length: 560 }, (_, i) => -8 - (i % 13) * 0.1);
      const scale = Float32Array.from({ length: 560 }, (_, i) => 0.2 + (i % 7) * 0.05);
      writeFileSync(join(dir, 'am.mvn'), amMvnText(shift, scale));
      execFileSync(SPEECH_PYTHON, [REFERENCE, 'lfr-cmvn', join(dir, 'in.f32'), String(frames), '80', '7', '6', join(dir, 'am.mvn'), join(dir, 'out.f32')]);
      const expected = readF32(join(dir, 'out.f32'));
      const cmvn = parseAmMvn(readFileSync(join(dir, 'am.mvn'), 'utf8'));
      const stacked = stackLowFrameRate(feats, 80, 7, 6);
      expect(stacked.length).toBe(Math.ceil(frames / 6) * 560);
      const ours = stacked.map((v, i) => (v + cmvn.shift[i % 560]) * cmvn.scale[i % 560]);
      expect(maxAbsDiff(ours, expected)).toBeLessThan(1e-4);
    }
  });

  it('runs the whole front end on a WAV: scale, fbank, LFR(7, 6), CMVN', () => {
    const audio = decodeAudioFile(readFileSync(SPEECH_WAV));
    const cmvn = { shift: new Float32Array(560).fill(-10), scale: new Float32Array(560).fill(0.5) };
    const features = new SpeechFrontEnd(DEFAULT_FRONT_END, cmvn).compute(audio.samples);
    const fbank = new KaldiFbank().compute(audio.samples.map((s) => s * 32768));
    expect(features.frames).toBe(Math.ceil(fbank.length / 80 / 6));
    // Output frame 1 starts at fbank frame 6 − 3 (three copies of the first frame pad the front).
    expect(features.data[560]).toBeCloseTo((fbank[3 * 80] - 10) * 0.5, 4);
  });
});

describe('am.mvn', () => {
  it('refuses a file without <AddShift> / <Rescale> vectors', () => {
    expect(() => parseAmMvn('<Nnet>\n</Nnet>\n')).toThrow(/AddShift/);
  });
});
