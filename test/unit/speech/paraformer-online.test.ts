import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { BackendSession } from '../../../src/backends/backend.js';
import { OnnxBackend } from '../../../src/backends/onnx/onnx-backend.js';
import { decodeAudioFile } from '../../../src/speech/audio-input.js';
import { ParaformerOnline, type ParaformerOnlineStream } from '../../../src/speech/paraformer-online.js';
import { paraformerSentence } from '../../../src/speech/paraformer-decoder.js';
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

/** `session` with the rows of every call it runs recorded in `rows`. */
function counted(session: BackendSession, rows: number[]): BackendSession {
  return {
    backend: session.backend,
    metadata: () => session.metadata(),
    dispose: () => session.dispose(),
    run(inputs, outputs) {
      rows.push(Object.values(inputs)[0].shape[0]);
      return session.run(inputs, outputs);
    },
  };
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

  it('stacks chunks of four streams as rows of one encoder and decoder call, each stream decoding as alone', async () => {
    const encoderRows: number[] = [];
    const decoderRows: number[] = [];
    const backend = new OnnxBackend();
    const batched = new ParaformerOnline(folder, counted(await backend.load(folder.modelFile), encoderRows), counted(await backend.load(folder.streaming!.decoderFile), decoderRows));
    // Three streams in FunASR's 600 ms chunks, whose chunks after the first have equal shapes, and one in odd sizes, which has rows of its own.
    const streams = [[SPEECH_WAVS[0], CHUNK_SAMPLES], [SPEECH_WAVS[3], CHUNK_SAMPLES], [SPEECH_WAVS[7], CHUNK_SAMPLES], [SPEECH_WAVS[5], 7000]] as const;
    const chunks = streams.map(([wav, size]) => chunksOf(samplesOf(wav), size));
    const alone = async (list: Float32Array[]): Promise<string[]> => {
      const stream = model.newStream();
      const out: string[] = [];
      for (const [i, chunk] of list.entries()) out.push(await model.accept(stream, chunk, i === list.length - 1));
      return out;
    };
    const states: ParaformerOnlineStream[] = streams.map(() => batched.newStream());
    const texts: string[][] = streams.map(() => []);
    for (let step = 0; chunks.some((list) => step < list.length); step++) {
      const live = chunks.flatMap((list, s) => (step < list.length ? [s] : []));
      const pieces = await batched.acceptChunks(live.map((s) => ({ stream: states[s], pieces: [{ samples: chunks[s][step], final: step === chunks[s].length - 1 }] })));
      live.forEach((s, i) => texts[s].push(paraformerSentence(pieces[i]).text));
    }
    for (const [s, list] of chunks.entries()) expect(texts[s]).toEqual(await alone(list));
    expect(texts.flat().join('').length).toBeGreaterThan(0);
    expect(Math.max(...encoderRows)).toBeGreaterThan(1);
    expect(Math.max(...decoderRows)).toBeGreaterThan(1);
  }, 60_000);

  it('decodes whole utterances of different lengths together, a final call of two passes included, as each alone', async () => {
    const wavs = [SPEECH_WAVS[0], SPEECH_WAVS[2], SPEECH_WAVS[7]];
    // 600 ms chunks, the last two as one final call: more than a chunk's frames, which funasr_onnx runs as two passes.
    const listOf = (wav: string): Float32Array[] => {
      const samples = samplesOf(wav);
      const list = chunksOf(samples, CHUNK_SAMPLES);
      return [...list.slice(0, -2), samples.subarray((list.length - 2) * CHUNK_SAMPLES)];
    };
    const work = wavs.map((wav) => ({ stream: model.newStream(), pieces: listOf(wav).map((samples, i, all) => ({ samples, final: i === all.length - 1 })) }));
    const together = await model.acceptChunks(work);
    for (const [i, wav] of wavs.entries()) {
      const stream = model.newStream();
      const list = listOf(wav);
      const pieces: string[] = [];
      for (const [j, chunk] of list.entries()) pieces.push(...(await model.acceptPieces(stream, chunk, j === list.length - 1)));
      expect(together[i]).toEqual(pieces);
    }
  }, 60_000);

  it('refuses the same stream twice in one call: its passes depend on each other', async () => {
    const stream = model.newStream();
    const piece = { samples: new Float32Array(9600), final: false };
    await expect(model.acceptChunks([{ stream, pieces: [piece] }, { stream, pieces: [piece] }])).rejects.toThrow(/one batch row at a time/);
  });
});
