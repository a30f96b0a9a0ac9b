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
});
