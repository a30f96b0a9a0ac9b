import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wavefile from 'wavefile';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadNpuBinding } from '../../src/backends/npu/native-binding.js';
import { ACL_LIBRARY_ENV } from '../../src/backends/npu/npu-library.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { amMvnText, makeTinyFunAsrModels, makeTinyVadAndPunctuation, missingPython, referenceTranscript, SPEECH_WAVS } from '../helpers/speech-python.js';
import { REAL_HARDWARE, setUpNpuTests, type NpuTestEnv } from './npu-test-env.js';
import { GEARS, omFolder } from './speech-om-folder.js';

const ADDON_BUILT = !('reason' in loadNpuBinding());
const missing = !ADDON_BUILT ? 'the NPU addon is not built (npm run build:native)' : REAL_HARDWARE ? 'the simulated .om of the tiny models is made by the simulation' : (missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed'));

/** The recordings that fit in FRAMES (all but the 7.1 s one), and the one that does not. */
const FITTING = SPEECH_WAVS.filter((w) => !w.endsWith('-0870.wav'));
const OVER_LONG = SPEECH_WAVS.find((w) => w.endsWith('-0870.wav'))!;
/** The VAD's longest segment in the chained test (SERVE_FN_TEST_SEGMENT_MS only to check that the test fails without the cut). */
const SEGMENT_MS = Number(process.env.SERVE_FN_TEST_SEGMENT_MS ?? 5000);

function useLibrary(path: string | undefined): () => void {
  const previous = process.env[ACL_LIBRARY_ENV];
  if (path) process.env[ACL_LIBRARY_ENV] = path;
  return () => {
    if (previous === undefined) delete process.env[ACL_LIBRARY_ENV];
    else process.env[ACL_LIBRARY_ENV] = previous;
  };
}

describe.skipIf(missing)(`offline ASR folders served from a simulated model.om (npu_om)${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-om-'));
  let env: NpuTestEnv;
  let restore: () => void;
  let models: { senseVoice: string; paraformer: string };
  let om: { senseVoice: string; paraformer: string };
  let server: ServeFnServer;
  let base = '';

  beforeAll(async () => {
    env = setUpNpuTests();
    restore = useLibrary(env.libraryPath);
    models = makeTinyFunAsrModels(dir);
    om = { senseVoice: omFolder(models.senseVoice, join(dir, 'SenseVoiceSmall-om')), paraformer: omFolder(models.paraformer, join(dir, 'Paraformer-om')) };
    // A long wait so concurrent utterances surely share passes; the default batch (8) is bounded by the largest gear (4).
    server = new ServeFnServer({ models: [], speechFolders: [models.senseVoice, om.senseVoice, models.paraformer, om.paraformer], speech: { maxQueueDelayUs: 200_000 }, collectProcessMetrics: false });
    base = await server.listen(0, '127.0.0.1');
  }, 180_000);

  afterAll(async () => {
    await server?.close();
    restore?.();
    env?.cleanup();
  });

  async function transcribe(model: string, wav: string | Uint8Array): Promise<{ status: number; body: any }> {
    const form = new FormData();
    form.append('file', new Blob([typeof wav === 'string' ? readFileSync(wav) : wav], { type: 'audio/wav' }), 'audio.wav');
    form.append('model', model);
    const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: form });
    return { status: res.status, body: await res.json() };
  }

  async function stats(model: string): Promise<{ inference_count: number; execution_count: number }> {
    return ((await (await fetch(`${base}/v2/models/${model}/stats`)).json()) as { model_stats: { inference_count: number; execution_count: number }[] }).model_stats[0];
  }

  it('bounds the batch by the largest gear of the OM, and keeps the ONNX folder on ONNX Runtime', async () => {
    const config = async (model: string) => (await (await fetch(`${base}/v2/models/${model}/config`)).json()) as { max_batch_size: number };
    expect((await config('SenseVoiceSmall-om')).max_batch_size).toBe(4);
    expect((await config('SenseVoiceSmall-tiny')).max_batch_size).toBe(8);
  });

  it.each([
    ['SenseVoiceSmall', 'SenseVoiceSmall-tiny', 'SenseVoiceSmall-om'],
    ['Paraformer', 'Paraformer-tiny', 'Paraformer-om'],
  ])('%s: concurrent utterances of different lengths give the same text from the .om as from the .onnx, in batches padded to a gear', async (_, onnxModel, omModel) => {
    const fromOnnx = await Promise.all(FITTING.map((wav) => transcribe(onnxModel, wav)));
    const executesBefore = env.counter('executes');
    const before = await stats(omModel);
    const fromOm = await Promise.all(FITTING.map((wav) => transcribe(omModel, wav)));
    const after = await stats(omModel);
    expect(fromOm.map((r) => r.status)).toEqual(FITTING.map(() => 200));
    expect(fromOm.map((r) => r.body.text)).toEqual(fromOnnx.map((r) => r.body.text));
    expect(new Set(fromOm.map((r) => r.body.text)).size).toBe(FITTING.length);
    // The numpy reference of the same weights agrees too (it sees only the utterance's own frames).
    const folder = onnxModel.startsWith('SenseVoice') ? models.senseVoice : models.paraformer;
    expect(fromOm[2].body.text).toBe(referenceTranscript(folder, FITTING[2]).text);
    // Seven utterances went through fewer passes than seven: batches of several rows, none over the largest gear (the backend refuses those).
    expect(after.inference_count - before.inference_count).toBe(FITTING.length);
    const passes = after.execution_count - before.execution_count;
    expect(passes).toBeLessThan(FITTING.length);
    expect(passes).toBeGreaterThanOrEqual(Math.ceil(FITTING.length / 4));
    expect(env.counter('executes') - executesBefore).toBe(passes);
    // The simulation ran the last pass at a compiled gear.
    expect(GEARS).toContain(env.counter('last_batch_size'));
  });

  it("refuses an utterance over the OM's compiled length with a 400 naming the limit in seconds, in OpenAI's envelope", async () => {
    const { status, body } = await transcribe('SenseVoiceSmall-om', OVER_LONG);
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/Audio is 7\.10 s long; speech model 'SenseVoiceSmall-om' is a compiled \.om whose speech input takes at most 6\.01 s \(100 frames\)/) });
    // The same file from the ONNX folder, which has no compiled length, is transcribed.
    expect((await transcribe('SenseVoiceSmall-tiny', OVER_LONG)).status).toBe(200);
  });

  it("refuses it on FunASR's HTTP route with a 400", async () => {
    const form = new FormData();
    form.append('file', new Blob([readFileSync(OVER_LONG)], { type: 'audio/wav' }), 'long.wav');
    form.append('model', 'Paraformer-om');
    const res = await fetch(`${base}/recognition`, { method: 'POST', body: form });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/takes at most 6\.01 s \(100 frames\)/);
  });

  it('refuses at start-up a batch size over the largest gear of the OM', async () => {
    const other = new ServeFnServer({ models: [], speechFolders: [om.paraformer], speech: { maxBatchSize: 8 }, collectProcessMetrics: false });
    try {
      await expect(other.start()).rejects.toMatchObject({ code: 'SF_ERR_SPEECH_FOLDER_INVALID', message: expect.stringMatching(/compiled for batches of at most 4 rows \(its largest gear\), under the 8 asked for/) });
    } finally {
      await other.close().catch(() => undefined);
    }
  });

  it('takes an over-long recording when a VAD served beside it cuts it into segments within the compiled length', async () => {
    const { vad } = makeTinyVadAndPunctuation(join(dir, 'chain'));
    // FunASR's FSMN-VAD cuts a segment at max_single_segment_time (ms): under the OM's 6.01 s. Pauses
    // end no segment here (max_end_silence_time a minute), so only that limit keeps them short.
    const config = join(vad, 'config.yaml');
    writeFileSync(config, readFileSync(config, 'utf8').replace('max_end_silence_time: 300', 'max_end_silence_time: 60000').replace('max_single_segment_time: 60000', `max_single_segment_time: ${SEGMENT_MS}`));
    const chained = new ServeFnServer({ models: [], speechFolders: [models.senseVoice, om.senseVoice, vad], collectProcessMetrics: false });
    const chainBase = await chained.listen(0, '127.0.0.1');
    try {
      const ask = async (model: string) => {
        const form = new FormData();
        form.append('file', new Blob([readFileSync(OVER_LONG)], { type: 'audio/wav' }), 'long.wav');
        form.append('model', model);
        form.append('response_format', 'verbose_json');
        const res = await fetch(`${chainBase}/v1/audio/transcriptions`, { method: 'POST', body: form });
        return { status: res.status, body: (await res.json()) as { text: string; segments: { start: number; end: number }[] } };
      };
      const [fromOm, fromOnnx] = [await ask('SenseVoiceSmall-om'), await ask('SenseVoiceSmall-tiny')];
      expect(fromOm.status).toBe(200);
      // The first segment is the one the limit cut (5 s of speech and a frame), none over the OM's length.
      expect(fromOm.body.segments[0].end - fromOm.body.segments[0].start).toBeCloseTo(SEGMENT_MS / 1000, 1);
      expect(fromOm.body.segments.every((seg) => seg.end - seg.start <= 6.01)).toBe(true);
      expect(fromOm.body.text.length).toBeGreaterThan(0);
      expect(fromOm.body.text).toBe(fromOnnx.body.text);
    } finally {
      await chained.close();
    }
  }, 60_000);

  it('refuses it on KServe v2 with a 400 and its error body', async () => {
    const audio = readFileSync(OVER_LONG);
    const element = new Uint8Array(4 + audio.length);
    new DataView(element.buffer).setUint32(0, audio.length, true);
    element.set(audio, 4);
    const header = JSON.stringify({ inputs: [{ name: 'AUDIO', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: element.length } }], outputs: [{ name: 'TRANSCRIPT', parameters: { binary_data: false } }] });
    const res = await fetch(`${base}/v2/models/Paraformer-om/infer`, { method: 'POST', body: Buffer.concat([Buffer.from(header), element]), headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(Buffer.byteLength(header)) } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/takes at most 6\.01 s \(100 frames\)/);
  });

  it("refuses it on FunASR's WebSocket with an error message naming the limit", async () => {
    const samples = new wavefile.WaveFile(readFileSync(OVER_LONG)).getSamples(false, Int16Array) as unknown as Int16Array;
    const pcm = new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
    const socket = new WebSocket(`${base.replace('http', 'ws')}/?model=SenseVoiceSmall-om`);
    const replies: any[] = [];
    await new Promise<void>((resolve, reject) => {
      socket.on('error', reject);
      socket.on('message', (data) => {
        replies.push(JSON.parse(String(data)));
        socket.close();
      });
      socket.on('close', () => resolve());
      socket.on('open', () => {
        socket.send(JSON.stringify({ mode: 'offline', wav_name: 'long', wav_format: 'pcm', audio_fs: 16000, is_speaking: true }));
        for (let at = 0; at < pcm.length; at += 3200) socket.send(pcm.subarray(at, at + 3200));
        socket.send(JSON.stringify({ is_speaking: false }));
      });
    });
    expect(replies[0]).toMatchObject({ error: expect.stringMatching(/takes at most 6\.01 s \(100 frames\)/), code: 'SF_ERR_AUDIO_OVER_MODEL_LENGTH' });
  });
});

describe.skipIf(!ADDON_BUILT || REAL_HARDWARE)('a model.om folder without an AscendCL library', () => {
  it('fails to load with SF_ERR_NPU_UNAVAILABLE naming the model', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'speech-om-nolib-'));
    const folder = join(dir, 'SenseVoiceSmall-om');
    mkdirSync(folder);
    // config.yaml, am.mvn and tokens.json as a SenseVoice export ships them; the OM's bytes are never read.
    writeFileSync(join(folder, 'config.yaml'), 'model: SenseVoiceSmall\n');
    writeFileSync(join(folder, 'am.mvn'), amMvnText(new Float32Array(560).fill(-1), new Float32Array(560).fill(0.5)));
    writeFileSync(join(folder, 'tokens.json'), '["<blank>"]');
    writeFileSync(join(folder, 'model.om'), 'not read');
    const restore = useLibrary(join(dir, 'no-such-ascend', 'libascendcl.so'));
    const server = new ServeFnServer({ models: [], speechFolders: [folder], collectProcessMetrics: false });
    try {
      const err = await server.start().then(() => undefined, (e: unknown) => e as { code?: string; message: string });
      expect(err).toMatchObject({ code: 'SF_ERR_NPU_UNAVAILABLE' });
      expect(err!.message).toMatch(/speech model 'SenseVoiceSmall-om' is served from .*model\.om, which needs it/);
    } finally {
      await server.close().catch(() => undefined);
      restore();
    }
  });
});
