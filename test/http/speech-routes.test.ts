import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wavefile from 'wavefile';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { makeTinyFunAsrModels, missingPython, referenceTranscript, SPEECH_WAVS } from '../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');

interface Answer {
  readonly status: number;
  readonly type: string | null;
  readonly text: string;
  json(): any;
}

describe.skipIf(missing)(`speech folders served with no code${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-routes-'));
  let models: { senseVoice: string; paraformer: string };
  let server: ServeFnServer;
  let base = '';

  beforeAll(async () => {
    models = makeTinyFunAsrModels(dir);
    server = new ServeFnServer({ models: [], speechFolders: [models.senseVoice, models.paraformer] });
    base = await server.listen(0, '127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  async function post(path: string, form: FormData): Promise<Answer> {
    const res = await fetch(base + path, { method: 'POST', body: form });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type'), text, json: () => JSON.parse(text) };
  }

  function transcription(wav: string | Uint8Array, fields: Record<string, string | string[]>, filename = 'audio.wav'): FormData {
    const form = new FormData();
    form.append('file', new Blob([typeof wav === 'string' ? readFileSync(wav) : wav], { type: 'audio/wav' }), filename);
    for (const [key, value] of Object.entries(fields)) for (const v of [value].flat()) form.append(key, v);
    return form;
  }

  it('transcribes recorded speech with the SenseVoice-shaped model as the numpy reference does, language and ITN honoured', async () => {
    for (const [language, itn] of [['en', 'withitn'], ['zh', 'withitn']] as const) {
      const expected = referenceTranscript(models.senseVoice, SPEECH_WAVS[0], language, itn);
      const res = await post('/v1/audio/transcriptions', transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', language }));
      expect(res.status).toBe(200);
      expect(expected.text.length).toBeGreaterThan(0);
      expect(res.json()).toEqual({ text: expected.text, usage: { type: 'duration', seconds: 3 } });
    }
  });

  it('transcribes with the Paraformer-shaped model as the numpy reference does', async () => {
    const expected = referenceTranscript(models.paraformer, SPEECH_WAVS[2]);
    const res = await post('/v1/audio/transcriptions', transcription(SPEECH_WAVS[2], { model: 'Paraformer-tiny' }));
    expect(res.status).toBe(200);
    expect(res.json().text).toBe(expected.text);
  });

  it('decodes requests batched together exactly as each alone', async () => {
    const alone: string[] = [];
    for (const wav of SPEECH_WAVS) alone.push((await post('/v1/audio/transcriptions', transcription(wav, { model: 'SenseVoiceSmall-tiny', response_format: 'text' }))).text);
    const before = await statistics('SenseVoiceSmall-tiny');
    const together = await Promise.all(SPEECH_WAVS.map((wav) => post('/v1/audio/transcriptions', transcription(wav, { model: 'SenseVoiceSmall-tiny', response_format: 'text' }))));
    const after = await statistics('SenseVoiceSmall-tiny');
    expect(together.map((r) => r.text)).toEqual(alone);
    expect(new Set(alone).size).toBe(SPEECH_WAVS.length);
    expect(after.inference_count - before.inference_count).toBe(SPEECH_WAVS.length);
    // Eight utterances of different lengths went through fewer forward passes than eight.
    expect(after.execution_count - before.execution_count).toBeLessThan(SPEECH_WAVS.length);
  });

  async function statistics(model: string): Promise<{ inference_count: number; execution_count: number }> {
    const res = await fetch(`${base}/v2/models/${model}/stats`);
    return ((await res.json()) as { model_stats: { inference_count: number; execution_count: number }[] }).model_stats[0];
  }

  it('answers text, srt, vtt and verbose_json as OpenAI does', async () => {
    const expected = referenceTranscript(models.senseVoice, SPEECH_WAVS[0]).text;
    const text = await post('/v1/audio/transcriptions', transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', response_format: 'text' }));
    expect(text.type).toMatch(/^text\/plain/);
    expect(text.text).toBe(expected);
    const srt = await post('/v1/audio/transcriptions', transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', response_format: 'srt' }));
    expect(srt.text).toBe(`1\n00:00:00,000 --> 00:00:02,990\n${expected}\n`);
    const vtt = await post('/v1/audio/transcriptions', transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', response_format: 'vtt' }));
    expect(vtt.text).toBe(`WEBVTT\n\n00:00:00.000 --> 00:00:02.990\n${expected}\n`);
    const verbose = await post('/v1/audio/transcriptions', transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', response_format: 'verbose_json', language: 'en', 'timestamp_granularities[]': 'segment' }));
    expect(verbose.json()).toMatchObject({ task: 'transcribe', language: 'english', duration: 2.99, text: expected, segments: [{ id: 0, start: 0, end: 2.99, text: expected }], usage: { type: 'duration', seconds: 3 } });
  });

  it('streams transcript.text.delta then transcript.text.done', async () => {
    const expected = referenceTranscript(models.senseVoice, SPEECH_WAVS[0]).text;
    const res = await post('/v1/audio/transcriptions', transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', stream: 'true' }));
    expect(res.type).toMatch(/^text\/event-stream/);
    const events = res.text.split('\n\n').filter((e) => e !== '').map((e) => JSON.parse(e.replace(/^data: /, '')));
    expect(events).toEqual([
      { type: 'transcript.text.delta', delta: expected },
      { type: 'transcript.text.done', text: expected, usage: { type: 'duration', seconds: 3 } },
    ]);
  });

  it.each([
    ['not audio', () => transcription(new TextEncoder().encode('hello, I am text'), { model: 'SenseVoiceSmall-tiny' }), 400, /not a WAV file/],
    ['an empty file', () => transcription(new Uint8Array(0), { model: 'SenseVoiceSmall-tiny' }), 400, /empty/],
    ['192 kHz audio', () => transcription(wav(192000, 1000), { model: 'SenseVoiceSmall-tiny' }), 400, /192000 Hz/],
    // OpenAI answers any unacceptable input with 400 (openai-errors.ts folds serve-fn's 413 onto it).
    ['an hour of audio', () => transcription(wav(8000, 8000 * 3600), { model: 'SenseVoiceSmall-tiny' }), 400, /3600.0 s long, over the limit of 600 s/],
    ['an unknown model', () => transcription(SPEECH_WAVS[0], { model: 'whisper-1' }), 404, /whisper-1/],
    ['no file', () => Object.assign(new FormData(), {}), 400, /file/],
    ['word timestamps without verbose_json', () => transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', 'timestamp_granularities[]': 'word' }), 400, /verbose_json/],
    ['word timestamps from a model without them', () => transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', response_format: 'verbose_json', 'timestamp_granularities[]': 'word' }), 400, /no word timestamps/],
    ['an unknown language', () => transcription(SPEECH_WAVS[0], { model: 'SenseVoiceSmall-tiny', language: 'xx' }), 400, /language 'xx'/],
  ])('refuses %s in OpenAI\'s error envelope', async (_, form, status, message) => {
    const body = form();
    if (!body.has('model')) body.append('model', 'SenseVoiceSmall-tiny');
    const res = await post('/v1/audio/transcriptions', body);
    expect(res.status).toBe(status);
    expect(res.json().error).toMatchObject({ type: status === 404 ? 'invalid_request_error' : 'invalid_request_error', message: expect.stringMatching(message) });
  });

  it("answers FunASR's HTTP recognition in its C++ server's shape, SenseVoice's tags before the words", async () => {
    const expected = referenceTranscript(models.senseVoice, SPEECH_WAVS[0], 'en', 'woitn');
    const form = transcription(SPEECH_WAVS[0], { svs_lang: 'en', svs_itn: 'false' }, '0880.wav');
    form.append('model', 'SenseVoiceSmall-tiny');
    const res = await post('/recognition', form);
    const answer = res.json();
    expect(answer).toEqual({ text: expect.any(String), mode: 'offline', is_final: false, wav_name: '0880.wav' });
    // The C++ runtime's join: tags, a space, then each ▁-piece with a space of its own.
    expect(answer.text.replace(/ +/g, ' ')).toBe(`<|en|><|NEUTRAL|><|Speech|> ${expected.text}`);
    expect(expected.tags).toEqual(['<|en|>', '<|NEUTRAL|>', '<|Speech|>', '<|woitn|>']);
  });

  /** Runs one FunASR WebSocket utterance: config frame, PCM in 100 ms frames, end frame; the replies until is_final, or the error. */
  async function funAsrUtterance(config: Record<string, unknown>, pcm: Uint8Array, query = ''): Promise<{ replies: any[]; close?: number }> {
    const socket = new WebSocket(`${base.replace('http', 'ws')}/${query}`);
    const replies: any[] = [];
    return new Promise((resolve, reject) => {
      socket.on('error', reject);
      socket.on('message', (data) => {
        const reply = JSON.parse(String(data));
        replies.push(reply);
        if (reply.is_final === true) {
          socket.close();
          resolve({ replies });
        }
      });
      socket.on('close', (code) => resolve({ replies, close: code }));
      socket.on('open', () => {
        socket.send(JSON.stringify(config));
        for (let at = 0; at < pcm.length; at += 3200) socket.send(pcm.subarray(at, at + 3200));
        socket.send(JSON.stringify({ is_speaking: false }));
      });
    });
  }

  /** The WAV file's 16-bit samples, as FunASR's client sends them. */
  function pcmOf(file: string): Uint8Array {
    const samples = new wavefile.WaveFile(readFileSync(file)).getSamples(false, Int16Array) as unknown as Int16Array;
    return new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
  }

  it("speaks FunASR's WebSocket protocol at /: offline and 2pass give the whole utterance's text, is_final on the last reply (the C++ server's rule)", async () => {
    const expected = referenceTranscript(models.paraformer, SPEECH_WAVS[2]).text;
    const offline = await funAsrUtterance({ mode: 'offline', wav_name: 'card1', wav_format: 'pcm', audio_fs: 16000, is_speaking: true, hotwords: '', itn: true }, pcmOf(SPEECH_WAVS[2]), '?model=Paraformer-tiny');
    expect(offline.replies).toEqual([{ mode: 'offline', text: expected, wav_name: 'card1', is_final: true }]);
    const twoPass = await funAsrUtterance({ mode: '2pass', wav_name: 'card1', chunk_size: [5, 10, 5], is_speaking: true }, pcmOf(SPEECH_WAVS[2]), '?model=Paraformer-tiny');
    expect(twoPass.replies).toEqual([{ mode: '2pass-offline', text: expected, wav_name: 'card1', is_final: true }]);
  });

  it('passes svs_lang and svs_itn to SenseVoice over the WebSocket', async () => {
    const expected = referenceTranscript(models.senseVoice, SPEECH_WAVS[0], 'zh', 'woitn');
    const { replies } = await funAsrUtterance({ mode: 'offline', wav_name: 'w', svs_lang: 'zh', svs_itn: false }, pcmOf(SPEECH_WAVS[0]));
    expect(replies).toHaveLength(1);
    expect(replies[0].text.replace(/ +/g, ' ')).toBe(`<|zh|><|NEUTRAL|><|Speech|> ${expected.text}`);
  });

  it.each([
    ['online mode', { mode: 'online' }, /needs a streaming model/],
    ['hotwords', { mode: 'offline', hotwords: '{"serve-fn": 20}' }, /hotwords need a contextual Paraformer/],
  ])('refuses %s with an error message and close code 1008', async (_, config, message) => {
    const { replies, close } = await funAsrUtterance(config, new Uint8Array(3200));
    expect(close).toBe(1008);
    expect(replies).toEqual([{ error: expect.stringMatching(message), code: 'SF_ERR_BAD_REQUEST' }]);
  });

  it('is a KServe v2 model: metadata, and AUDIO bytes in, TRANSCRIPT out', async () => {
    const meta = await (await fetch(`${base}/v2/models/Paraformer-tiny`)).json();
    expect(meta).toMatchObject({ name: 'Paraformer-tiny', platform: 'serve-fn', inputs: expect.arrayContaining([{ name: 'AUDIO', datatype: 'BYTES', shape: [-1, 1] }]), outputs: expect.arrayContaining([{ name: 'TRANSCRIPT', datatype: 'BYTES', shape: [-1, 1] }]) });
    const audio = readFileSync(SPEECH_WAVS[2]);
    const element = new Uint8Array(4 + audio.length);
    new DataView(element.buffer).setUint32(0, audio.length, true);
    element.set(audio, 4);
    const header = JSON.stringify({ inputs: [{ name: 'AUDIO', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: element.length } }], outputs: [{ name: 'TRANSCRIPT', parameters: { binary_data: false } }] });
    const body = Buffer.concat([Buffer.from(header), element]);
    const res = await fetch(`${base}/v2/models/Paraformer-tiny/infer`, { method: 'POST', body, headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(Buffer.byteLength(header)) } });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { outputs: { name: string; data: string[] }[] };
    expect(answer.outputs[0]).toMatchObject({ name: 'TRANSCRIPT', data: [referenceTranscript(models.paraformer, SPEECH_WAVS[2]).text] });
  });
});

function wav(rate: number, samples: number): Uint8Array {
  const file = new wavefile.WaveFile();
  file.fromScratch(1, rate, '16', new Int16Array(samples));
  return file.toBuffer();
}
