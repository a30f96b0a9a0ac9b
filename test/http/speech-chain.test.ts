import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { decodeAudioFile } from '../../src/speech/audio-input.js';
import { CtPunctuation } from '../../src/speech/ct-punctuation.js';
import { readPunctuationFolder } from '../../src/speech/speech-chain-folders.js';
import { makeTinyFunAsrModels, makeTinyVadAndPunctuation, missingPython, SPEECH_PYTHON, SPEECH_WAVS } from '../helpers/speech-python.js';

/** FunASR's own client (test/protocol/speech-clients.test.ts finds it the same way). */
const FUNASR_CLIENT = process.env.FUNASR_CHECKOUT && join(process.env.FUNASR_CHECKOUT, 'runtime/python/websocket/funasr_wss_client.py');

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
const WAV = SPEECH_WAVS[0];
/** The tiny VAD's segments of this recording (test/unit/speech/fsmn-vad.test.ts checks them against FunASR's E2EVadModel). */
const SEGMENTS_MS = [[230, 900], [900, 1460], [1460, 1810]];

describe.skipIf(missing)(`VAD → ASR → punctuation, as FunASR's 2pass server chains them${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-chain-'));
  let chained: ServeFnServer;
  let alone: ServeFnServer;
  let chainedBase = '';
  let aloneBase = '';
  let punctuation: CtPunctuation;

  beforeAll(async () => {
    const asr = makeTinyFunAsrModels(dir);
    const { vad, punctuation: punc } = makeTinyVadAndPunctuation(dir);
    // One parent folder's worth of exports, as `serve-fn start ./funasr-models` finds them.
    chained = new ServeFnServer({ models: [], speechFolders: [asr.paraformer, vad, punc] });
    alone = new ServeFnServer({ models: [], speechFolders: [asr.paraformer] });
    chainedBase = await chained.listen(0, '127.0.0.1');
    aloneBase = await alone.listen(0, '127.0.0.1');
    const folder = readPunctuationFolder(punc);
    punctuation = new CtPunctuation(folder, await new OnnxBackend().load(folder.modelFile, { options: { intraOpNumThreads: 1 } }));
  }, 120_000);

  afterAll(async () => {
    await Promise.all([chained?.close(), alone?.close()]);
  });

  /** The Paraformer alone on one span of the recording, sent as 16 kHz PCM to FunASR's HTTP route. */
  async function aloneOn(startMs: number, endMs: number): Promise<string> {
    const samples = decodeAudioFile(new Uint8Array(readFileSync(WAV))).samples.subarray(startMs * 16, endMs * 16);
    const pcm = Int16Array.from(samples, (x) => Math.max(-32768, Math.min(32767, Math.round(x * 32768))));
    const form = new FormData();
    form.append('file', new Blob([pcm.buffer]), 'cut.pcm');
    form.append('wav_format', 'pcm');
    form.append('audio_fs', '16000');
    const res = await fetch(`${aloneBase}/recognition`, { method: 'POST', body: form });
    return ((await res.json()) as { text: string }).text;
  }

  it('gives verbose_json the VAD\'s segments, each transcribed alone and punctuated; the ASR served alone still decodes the file whole', async () => {
    const form = new FormData();
    form.append('file', new Blob([readFileSync(WAV)]), 'a.wav');
    form.append('model', 'Paraformer-tiny');
    form.append('response_format', 'verbose_json');
    const res = await fetch(`${chainedBase}/v1/audio/transcriptions`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { text: string; segments: { start: number; end: number; text: string }[] };
    const expected = await Promise.all(SEGMENTS_MS.map(async ([s, e]) => punctuation.punctuate(await aloneOn(s, e))));
    expect(expected.every((t) => t.length > 1)).toBe(true);
    expect(body.segments.map((s) => [s.start, s.end, s.text])).toEqual(SEGMENTS_MS.map(([s, e], i) => [s / 1000, e / 1000, expected[i]]));
    expect(body.text).toBe(expected.join(''));
    const whole = new FormData();
    whole.append('file', new Blob([readFileSync(WAV)]), 'a.wav');
    whole.append('model', 'Paraformer-tiny');
    whole.append('response_format', 'verbose_json');
    const single = (await (await fetch(`${aloneBase}/v1/audio/transcriptions`, { method: 'POST', body: whole })).json()) as { segments: { start: number; end: number }[] };
    expect(single.segments.map((s) => s.start)).toEqual([0]);
  });

  it('answers FunASR\'s WebSocket offline mode with one result per VAD segment of the streamed chunks, then the final reply', async () => {
    const samples = readFileSync(WAV).subarray(44);
    const socket = new WebSocket(`${chainedBase.replace('http', 'ws')}/`);
    const replies: { mode: string; text: string; is_final: boolean }[] = [];
    await new Promise<void>((resolve, reject) => {
      socket.on('open', () => {
        socket.send(JSON.stringify({ mode: 'offline', wav_name: 'w', is_speaking: true, chunk_size: [5, 10, 5] }));
        for (let at = 0; at < samples.length; at += 3200) socket.send(samples.subarray(at, at + 3200));
        socket.send(JSON.stringify({ is_speaking: false }));
      });
      socket.on('message', (data) => {
        const reply = JSON.parse(String(data)) as { mode: string; text: string; is_final: boolean };
        replies.push(reply);
        if (reply.is_final) resolve();
      });
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    socket.close();
    const expected = await Promise.all(SEGMENTS_MS.map(async ([s, e]) => punctuation.punctuate(await aloneOn(s, e))));
    // Every segment ended before the end frame, so the reply to it is FunASR's C++ server's empty final one.
    expect(replies.map((r) => r.text)).toEqual([...expected, '']);
    expect(replies.map((r) => r.is_final)).toEqual([false, false, false, true]);
  });

  it.skipIf(!FUNASR_CLIENT).each(['offline', '2pass'])("works with FunASR's own funasr_wss_client.py in %s mode: one result per VAD segment (set FUNASR_CHECKOUT)", async (mode) => {
    const port = new URL(chainedBase).port;
    const args = [FUNASR_CLIENT!, '--host', '127.0.0.1', '--port', port, '--mode', mode, '--audio_in', WAV, '--ssl', '0', '--log_dir', mkdtempSync(join(tmpdir(), 'funasr-client-'))];
    const { stdout } = await promisify(execFile)(process.env.FUNASR_PYTHON ?? SPEECH_PYTHON, args, { timeout: 60_000 });
    const expected = await Promise.all(SEGMENTS_MS.map(async ([s, e]) => punctuation.punctuate(await aloneOn(s, e))));
    const printed = stdout.split('\n').filter((l) => l.startsWith('pid0_0: ')).at(-1);
    // The client prints the segments' texts as they arrive, joined.
    expect(printed).toBe(mode === 'offline' ? `pid0_0: demo: ${expected.join('')}` : `pid0_0: ${expected.join('')}`);
  }, 90_000);
});
