import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { CtPunctuation } from '../../src/speech/ct-punctuation.js';
import { readPunctuationFolder } from '../../src/speech/speech-chain-folders.js';
import { makeTinyFunAsrModels, makeTinyVadAndPunctuation, missingPython, SPEECH_WAVS } from '../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
const WAV = SPEECH_WAVS[0];
/** The tiny VAD's segments of this recording (test/unit/speech/fsmn-vad.test.ts checks them against FunASR's E2EVadModel). */
const SEGMENTS_MS = [[230, 900], [900, 1460], [1460, 1810]];

/** A KServe v2 binary-extension body: the JSON header, then each BYTES element as a 4-byte length and its bytes. */
function binaryInfer(inputs: { name: string; datatype: string; shape: number[]; bytes: Buffer }[], outputs?: string[]): { payload: Buffer; headers: Record<string, string> } {
  const header = JSON.stringify({
    inputs: inputs.map(({ name, datatype, shape, bytes }) => ({ name, datatype, shape, parameters: { binary_data_size: bytes.length } })),
    ...(outputs ? { outputs: outputs.map((name) => ({ name, parameters: { binary_data: false } })) } : {}),
  });
  return { payload: Buffer.concat([Buffer.from(header), ...inputs.map((i) => i.bytes)]), headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(Buffer.byteLength(header)) } };
}

function bytesElement(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32LE(bytes.length);
  return Buffer.concat([length, bytes]);
}

const int32 = (value: number): Buffer => Buffer.from(Int32Array.of(value).buffer);

describe.skipIf(missing)(`FSMN-VAD and CT-Transformer folders are KServe v2 models too${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-chain-v2-'));
  let server: ServeFnServer;
  let punctuation: CtPunctuation;

  beforeAll(async () => {
    const asr = makeTinyFunAsrModels(dir);
    const { vad, punctuation: punc } = makeTinyVadAndPunctuation(dir);
    server = new ServeFnServer({ models: [], speechFolders: [asr.paraformer, vad, punc], logger: false, collectProcessMetrics: false });
    await server.start();
    const folder = readPunctuationFolder(punc);
    punctuation = new CtPunctuation(folder, await new OnnxBackend().load(folder.modelFile, { options: { intraOpNumThreads: 1 } }));
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  const inject = (options: InjectOptions) => server.app.inject(options);

  it('lists them in the repository index, READY, with their metadata and ready routes', async () => {
    const index = (await inject({ method: 'POST', url: '/v2/repository/index' })).json() as { name: string; state: string }[];
    expect(index.map((m) => [m.name, m.state])).toEqual([['Paraformer-tiny', 'READY'], ['ct-punc-tiny', 'READY'], ['fsmn-vad-tiny', 'READY']]);
    expect((await inject({ url: '/v2/models/fsmn-vad-tiny' })).json()).toEqual({
      name: 'fsmn-vad-tiny', versions: ['1'], platform: 'serve-fn',
      inputs: [{ name: 'AUDIO', datatype: 'BYTES', shape: [1] }, { name: 'SAMPLE_RATE', datatype: 'INT32', shape: [1] }],
      outputs: [{ name: 'SEGMENTS', datatype: 'INT32', shape: [-1, 2] }],
    });
    expect((await inject({ url: '/v2/models/ct-punc-tiny' })).json()).toMatchObject({
      name: 'ct-punc-tiny', inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [-1, 1] }], outputs: [{ name: 'PUNCTUATED', datatype: 'BYTES', shape: [-1, 1] }],
    });
    expect((await inject({ url: '/v2/models/fsmn-vad-tiny/ready' })).statusCode).toBe(200);
    expect((await inject({ url: '/v2/models/ct-punc-tiny/ready' })).statusCode).toBe(200);
  });

  it('VAD: a WAV file in, its segments out as INT32 [n, 2] start/end ms; the same from raw PCM with SAMPLE_RATE; counted in its statistics', async () => {
    const before = ((await inject({ url: '/v2/models/fsmn-vad-tiny/stats' })).json() as { model_stats: { inference_count: number }[] }).model_stats[0].inference_count;
    const wav = readFileSync(WAV);
    const file = await inject({ method: 'POST', url: '/v2/models/fsmn-vad-tiny/infer', ...binaryInfer([{ name: 'AUDIO', datatype: 'BYTES', shape: [1], bytes: bytesElement(wav) }]) });
    expect(file.statusCode).toBe(200);
    expect(file.json().outputs).toEqual([{ name: 'SEGMENTS', datatype: 'INT32', shape: [3, 2], data: SEGMENTS_MS.flat() }]);
    const pcm = binaryInfer([{ name: 'AUDIO', datatype: 'BYTES', shape: [1], bytes: bytesElement(wav.subarray(44)) }, { name: 'SAMPLE_RATE', datatype: 'INT32', shape: [1], bytes: int32(16_000) }], ['SEGMENTS']);
    const raw = await inject({ method: 'POST', url: '/v2/models/fsmn-vad-tiny/infer', ...pcm });
    expect(raw.json().outputs).toEqual([{ name: 'SEGMENTS', datatype: 'INT32', shape: [3, 2], data: SEGMENTS_MS.flat() }]);
    const after = ((await inject({ url: '/v2/models/fsmn-vad-tiny/stats' })).json() as { model_stats: { inference_count: number }[] }).model_stats[0].inference_count;
    expect(after - before).toBe(2);
  });

  it('VAD: audio too short for a segment gives none, a [0, 2] tensor', async () => {
    const silence = Buffer.alloc(160 * 2);
    const res = await inject({ method: 'POST', url: '/v2/models/fsmn-vad-tiny/infer', ...binaryInfer([{ name: 'AUDIO', datatype: 'BYTES', shape: [1], bytes: bytesElement(silence) }, { name: 'SAMPLE_RATE', datatype: 'INT32', shape: [1], bytes: int32(16_000) }]) });
    expect(res.json().outputs).toEqual([{ name: 'SEGMENTS', datatype: 'INT32', shape: [0, 2], data: [] }]);
  });

  it.each([
    ['bytes that are not audio', [{ name: 'AUDIO', datatype: 'BYTES', data: ['not a wav file'], shape: [1] }], {}, /Audio could not be used/],
    ['an empty AUDIO', [{ name: 'AUDIO', datatype: 'BYTES', data: [''], shape: [1] }], {}, /AUDIO is empty/],
    ['a negative SAMPLE_RATE', [{ name: 'AUDIO', datatype: 'BYTES', data: ['ab'], shape: [1] }, { name: 'SAMPLE_RATE', datatype: 'INT32', data: [-1], shape: [1] }], {}, /SAMPLE_RATE must be 0/],
    ['192 kHz PCM', [{ name: 'AUDIO', datatype: 'BYTES', data: ['abcd'], shape: [1] }, { name: 'SAMPLE_RATE', datatype: 'INT32', data: [192_000], shape: [1] }], {}, /Audio could not be used/],
    ['no AUDIO', [{ name: 'SAMPLE_RATE', datatype: 'INT32', data: [16_000], shape: [1] }], {}, /AUDIO/],
    ['AUDIO as FP32', [{ name: 'AUDIO', datatype: 'FP32', data: [0.5], shape: [1] }], {}, /AUDIO/],
    ['an unknown input', [{ name: 'AUDIO', datatype: 'BYTES', data: ['x'], shape: [1] }, { name: 'WAVE', datatype: 'BYTES', data: ['x'], shape: [1] }], {}, /WAVE/],
    ['sequence parameters', [{ name: 'AUDIO', datatype: 'BYTES', data: ['x'], shape: [1] }], { sequence_id: 7, sequence_start: true }, /whole file per request/],
  ])('VAD: %s is a 400 in KServe v2\'s error shape', async (_, inputs, parameters, message) => {
    const res = await inject({ method: 'POST', url: '/v2/models/fsmn-vad-tiny/infer', payload: { inputs, parameters } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringMatching(message), code: expect.stringMatching(/^SF_ERR_/) });
  });

  it('punctuation: BYTES text in, punctuated text out, row by row as the model alone punctuates each', async () => {
    const texts = ['hello world how are you', '今天好吗', ''];
    const res = await inject({ method: 'POST', url: '/v2/models/ct-punc-tiny/infer', payload: { inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [3, 1], data: texts }] } });
    expect(res.statusCode).toBe(200);
    const expected = await Promise.all(texts.map((t) => punctuation.punctuate(t)));
    expect(expected.slice(0, 2).every((t, i) => t !== texts[i] && /[。？]$/.test(t))).toBe(true);
    expect(res.json().outputs).toEqual([{ name: 'PUNCTUATED', datatype: 'BYTES', shape: [3, 1], data: expected }]);
    const stats = (await inject({ url: '/v2/models/ct-punc-tiny/stats' })).json() as { model_stats: { name: string; inference_count: number }[] };
    expect(stats.model_stats[0]).toMatchObject({ name: 'ct-punc-tiny' });
    expect(stats.model_stats[0].inference_count).toBeGreaterThanOrEqual(3);
  });

  it.each([
    ['TEXT as INT32', { inputs: [{ name: 'TEXT', datatype: 'INT32', shape: [1, 1], data: [3] }] }, /TEXT/],
    ['no TEXT', { inputs: [] }, /TEXT/],
    ['a shape without the batch dimension', { inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [1], data: ['hello'] }] }, /TEXT/],
  ])('punctuation: %s is a 400 in KServe v2\'s error shape', async (_, payload, message) => {
    const res = await inject({ method: 'POST', url: '/v2/models/ct-punc-tiny/infer', payload });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringMatching(message), code: expect.stringMatching(/^SF_ERR_/) });
  });
});
