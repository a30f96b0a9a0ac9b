import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../../../src/backends/onnx/onnx-backend.js';
import { decodeAudioFile } from '../../../src/speech/audio-input.js';
import { ParaformerOnline } from '../../../src/speech/paraformer-online.js';
import { StreamingFrontEnd } from '../../../src/speech/paraformer-online-front-end.js';
import { readSpeechFolder, type SpeechFolder } from '../../../src/speech/speech-folder.js';
import { SpeechFrontEnd } from '../../../src/speech/speech-front-end.js';
import { makeTinyStreamingParaformer, missingPython, referenceStreaming, SPEECH_WAVS } from '../../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']);
/** FunASR's chunk_size [5, 10, 5]: 600 ms of 16 kHz audio per chunk, as its WebSocket clients send. */
const CHUNK_SAMPLES = 9600;

function samplesOf(wav: string): Float32Array {
  return decodeAudioFile(readFileSync(wav)).samples;
}

function chunksOf(samples: Float32Array, size: number): Float32Array[] {
  const out: Float32Array[] = [];
  for (let at = 0; at < samples.length; at += size) out.push(samples.subarray(at, at + size));
  return out;
}

describe.skipIf(missing)('streaming Paraformer (tiny export with fixed weights)', () => {
  let folder: SpeechFolder;
  let model: ParaformerOnline;

  beforeAll(async () => {
    folder = readSpeechFolder(makeTinyStreamingParaformer(mkdtempSync(join(tmpdir(), 'paraformer-online-'))));
    const backend = new OnnxBackend();
    model = new ParaformerOnline(folder, await backend.load(folder.modelFile), await backend.load(folder.streaming!.decoderFile));
  }, 60_000);

  it('reads the folder: decoder.onnx beside model.onnx, the cache shapes from config.yaml', () => {
    expect(folder).toMatchObject({ kind: 'ParaformerStreaming', streaming: { outputSize: 8, decoderBlocks: 2, fsmnLorder: 2, cifThreshold: 1, tailThreshold: 0.45, featureDim: 560 } });
  });

  it.each([9600, 1234, 160, 399])('streams features equal to the offline front end over the whole audio, in chunks of %i samples', (size) => {
    const samples = samplesOf(SPEECH_WAVS[2]);
    const whole = new SpeechFrontEnd(folder.frontEnd, folder.cmvn).compute(samples).data;
    const streaming = new StreamingFrontEnd(folder.frontEnd, folder.cmvn);
    const chunks = chunksOf(samples, size);
    const parts = chunks.map((chunk, i) => streaming.accept(chunk, i === chunks.length - 1));
    const streamed = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) streamed.set(part, (at += part.length) - part.length);
    expect(streamed.length).toBe(whole.length);
    expect(Math.max(...streamed.map((v, i) => Math.abs(v - whole[i])))).toBeLessThan(1e-5);
  });

  it.each([SPEECH_WAVS[0], SPEECH_WAVS[3], SPEECH_WAVS[7]])('decodes %s chunk by chunk as the numpy reference of funasr_onnx\'s online Paraformer', async (wav) => {
    const chunks = chunksOf(samplesOf(wav), CHUNK_SAMPLES);
    const stream = model.newStream();
    const texts: string[] = [];
    for (const [i, chunk] of chunks.entries()) texts.push(await model.accept(stream, chunk, i === chunks.length - 1));
    const expected = referenceStreaming(folder.dir, wav, CHUNK_SAMPLES).texts;
    expect(texts).toEqual(expected);
    expect(texts.join('').length).toBeGreaterThan(0);
  }, 60_000);

  it('keeps each stream\'s state apart: two streams interleaved decode as each alone', async () => {
    const [a, b] = [SPEECH_WAVS[0], SPEECH_WAVS[7]].map((wav) => chunksOf(samplesOf(wav), CHUNK_SAMPLES));
    const alone = async (chunks: Float32Array[]): Promise<string[]> => {
      const stream = model.newStream();
      const out: string[] = [];
      for (const [i, chunk] of chunks.entries()) out.push(await model.accept(stream, chunk, i === chunks.length - 1));
      return out;
    };
    const [streamA, streamB] = [model.newStream(), model.newStream()];
    const [outA, outB]: string[][] = [[], []];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (i < a.length) outA.push(await model.accept(streamA, a[i], i === a.length - 1));
      if (i < b.length) outB.push(await model.accept(streamB, b[i], i === b.length - 1));
    }
    expect(outA).toEqual(await alone(a));
    expect(outB).toEqual(await alone(b));
  }, 60_000);
});
