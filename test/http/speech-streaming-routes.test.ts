import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wavefile from 'wavefile';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { makeTinyFunAsrModels, makeTinyStreamingParaformer, missingPython, referenceStreaming, referenceTranscript, SPEECH_WAVS } from '../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
/** chunk_size [5, 10, 5]: the WebSocket session hands the streaming model 600 ms at a time. */
const CHUNK_SAMPLES = 9600;

describe.skipIf(missing)(`a streaming Paraformer served beside an offline one${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-streaming-'));
  let streaming = '';
  let offline = '';
  let server: ServeFnServer;
  let base = '';

  beforeAll(async () => {
    streaming = makeTinyStreamingParaformer(dir);
    offline = makeTinyFunAsrModels(dir).paraformer;
    server = new ServeFnServer({ models: [], speechFolders: [offline, streaming] });
    base = await server.listen(0, '127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  /** One FunASR WebSocket utterance: config frame, PCM in 100 ms frames, end frame; the replies until is_final, or the error. */
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

  function pcmOf(file: string): Uint8Array {
    const samples = new wavefile.WaveFile(readFileSync(file)).getSamples(false, Int16Array) as unknown as Int16Array;
    return new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
  }

  it('answers mode online with the partial words of each 600 ms chunk, as the reference of funasr_onnx\'s online model, is_final on the last', async () => {
    const wav = SPEECH_WAVS[0];
    const expected = referenceStreaming(streaming, wav, CHUNK_SAMPLES).texts.filter((t) => t !== '');
    expect(expected.length).toBeGreaterThan(2);
    const { replies } = await funAsrUtterance({ mode: 'online', wav_name: 'w', chunk_size: [5, 10, 5], is_speaking: true }, pcmOf(wav));
    expect(replies).toEqual(expected.map((text, i) => ({ mode: 'online', text, wav_name: 'w', is_final: i === expected.length - 1 })));
  }, 60_000);

  it('answers 2pass with 2pass-online partials from the streaming model, then 2pass-offline from the offline one served beside it', async () => {
    const wav = SPEECH_WAVS[7];
    const partials = referenceStreaming(streaming, wav, CHUNK_SAMPLES).texts;
    // FunASR's 2pass drops the online text of a segment's last chunk: the offline text replaces it.
    const online = partials.slice(0, -1).filter((t) => t !== '');
    const whole = referenceTranscript(offline, wav).text;
    for (const query of ['', '?model=ParaformerStreaming-tiny', '?model=Paraformer-tiny']) {
      const { replies } = await funAsrUtterance({ mode: '2pass', wav_name: 'w', is_speaking: true }, pcmOf(wav), query);
      expect(replies).toEqual([
        ...online.map((text) => ({ mode: '2pass-online', text, wav_name: 'w', is_final: false })),
        { mode: '2pass-offline', text: whole, wav_name: 'w', is_final: true },
      ]);
    }
  }, 60_000);

  it('transcribes a whole file with the streaming model on OpenAI\'s route, chunk by chunk as a stream', async () => {
    const wav = SPEECH_WAVS[3];
    const form = new FormData();
    form.append('file', new Blob([readFileSync(wav)], { type: 'audio/wav' }), 'a.wav');
    form.append('model', 'ParaformerStreaming-tiny');
    const res = await fetch(`${base}/v1/audio/transcriptions`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { text: string }).text).toBe(referenceStreaming(streaming, wav, CHUNK_SAMPLES).text);
  }, 60_000);

  it.each([
    ['the HTTP recognition route', async () => {
      const form = new FormData();
      form.append('file', new Blob([readFileSync(SPEECH_WAVS[2])], { type: 'audio/wav' }), 'a.wav');
      form.append('hotwords', '{"阿里巴巴": 20}');
      const res = await fetch(`${base}/recognition`, { method: 'POST', body: form });
      return { status: res.status, message: JSON.stringify(await res.json()) };
    }],
    ['the WebSocket in online mode', async () => {
      const { replies, close } = await funAsrUtterance({ mode: 'online', hotwords: '阿里巴巴 达摩院' }, new Uint8Array(3200));
      return { status: close, message: JSON.stringify(replies) };
    }],
  ])('refuses hotwords on %s: no served model is a contextual Paraformer', async (_, send) => {
    const { status, message } = await send();
    expect([400, 1008]).toContain(status);
    expect(message).toMatch(/hotwords need a contextual Paraformer \(model_eb\.onnx\)/);
  });

  it('takes an empty hotwords field, which asks for nothing', async () => {
    const form = new FormData();
    form.append('file', new Blob([readFileSync(SPEECH_WAVS[2])], { type: 'audio/wav' }), 'a.wav');
    form.append('model', 'Paraformer-tiny');
    form.append('hotwords', '');
    const res = await fetch(`${base}/recognition`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { text: string }).text).toBe(referenceTranscript(offline, SPEECH_WAVS[2]).text);
  });

  /** A WAV header that declares `channels` and `rate`, with `data` bytes of samples. */
  function wavHeader(channels: number, rate: number, data: Uint8Array): Uint8Array {
    const out = new Uint8Array(44 + data.length);
    const view = new DataView(out.buffer);
    out.set(new TextEncoder().encode('RIFF'), 0);
    view.setUint32(4, 36 + data.length, true);
    out.set(new TextEncoder().encode('WAVEfmt '), 8);
    view.setUint32(16, 16, true);
    view.setUint16(20, 1, true);
    view.setUint16(22, channels, true);
    view.setUint32(24, rate, true);
    view.setUint32(28, rate * channels * 2, true);
    view.setUint16(32, channels * 2, true);
    view.setUint16(34, 16, true);
    out.set(new TextEncoder().encode('data'), 36);
    view.setUint32(40, data.length, true);
    out.set(data, 44);
    return out;
  }

  it.each([
    ['not audio', () => new TextEncoder().encode('hello, I am text'), /not a WAV file/],
    ['an empty file', () => new Uint8Array(0), /empty/],
    ['a WAV file of 0 channels', () => wavHeader(0, 16000, new Uint8Array(3200)), /channels|could not be read/],
    ['192 kHz audio', () => wavHeader(1, 192000, new Uint8Array(3200)), /192000 Hz/],
  ])("refuses %s on FunASR's HTTP recognition and KServe v2 with a 400 naming what is wrong", async (_, bytes, message) => {
    for (const model of ['Paraformer-tiny', 'ParaformerStreaming-tiny']) {
      const form = new FormData();
      form.append('file', new Blob([bytes()], { type: 'audio/wav' }), 'a.wav');
      form.append('model', model);
      const res = await fetch(`${base}/recognition`, { method: 'POST', body: form });
      const text = await res.text();
      expect(res.status, text).toBe(400);
      expect(text).toMatch(message);
      // KServe v2's binary tensor extension carries the bytes as sent; the streaming model takes a whole utterance as a one-request sequence.
      const audio = bytes();
      const element = new Uint8Array(4 + audio.length);
      new DataView(element.buffer).setUint32(0, audio.length, true);
      element.set(audio, 4);
      const sequence = model === 'ParaformerStreaming-tiny' ? { parameters: { sequence_id: 7, sequence_start: true, sequence_end: true } } : {};
      const header = JSON.stringify({ ...sequence, inputs: [{ name: 'AUDIO', datatype: 'BYTES', shape: [1, 1], parameters: { binary_data_size: element.length } }] });
      const infer = await fetch(`${base}/v2/models/${model}/infer`, {
        method: 'POST', body: Buffer.concat([Buffer.from(header), element]),
        headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(Buffer.byteLength(header)) },
      });
      const answer = (await infer.json()) as { error?: string };
      expect(infer.status, answer.error).toBe(400);
      expect(answer.error).toMatch(message);
    }
  }, 60_000);

  it('refuses 192 kHz PCM on the WebSocket, which takes 16 kHz streams only', async () => {
    const { replies, close } = await funAsrUtterance({ mode: 'online', audio_fs: 192000 }, new Uint8Array(3200));
    expect(close).toBe(1008);
    expect(replies).toEqual([{ error: expect.stringMatching(/audio_fs 192000 is not supported/), code: 'SF_ERR_BAD_REQUEST' }]);
  });
});

describe.skipIf(missing)(`a streaming Paraformer served alone${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let server: ServeFnServer;
  let base = '';

  beforeAll(async () => {
    server = new ServeFnServer({ models: [], speechFolders: [makeTinyStreamingParaformer(mkdtempSync(join(tmpdir(), 'speech-streaming-alone-')))] });
    base = await server.listen(0, '127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it.each(['offline', '2pass'])("refuses mode %s, which needs an offline model, with an error message and close code 1008", async (mode) => {
    const socket = new WebSocket(`${base.replace('http', 'ws')}/`);
    const { replies, close } = await new Promise<{ replies: unknown[]; close: number }>((resolve, reject) => {
      const replies: unknown[] = [];
      socket.on('error', reject);
      socket.on('message', (data) => replies.push(JSON.parse(String(data))));
      socket.on('close', (code) => resolve({ replies, close: code }));
      socket.on('open', () => socket.send(JSON.stringify({ mode, is_speaking: true })));
    });
    expect(close).toBe(1008);
    expect(replies).toEqual([{ error: expect.stringMatching(new RegExp(`mode '${mode}' needs an offline model`)), code: 'SF_ERR_BAD_REQUEST' }]);
  });
});
