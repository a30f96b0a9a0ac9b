import { execFile } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { makeTinyFunAsrModels, missingPython, referenceTranscript, SPEECH_PYTHON, SPEECH_WAVS } from '../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
/**
 * A local checkout of github.com/modelscope/FunASR (as test/examples/streaming-asr.test.ts): its
 * runtime/python/websocket/funasr_wss_client.py is run against the served folders, with Debian's
 * python3 (python3-websockets) or FUNASR_PYTHON.
 */
const FUNASR_CLIENT = process.env.FUNASR_CHECKOUT && join(process.env.FUNASR_CHECKOUT, 'runtime/python/websocket/funasr_wss_client.py');

describe.skipIf(missing)(`real clients against speech folders${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-clients-'));
  let models: { senseVoice: string; paraformer: string };
  let server: ServeFnServer;
  let base = '';
  let client: OpenAI;

  beforeAll(async () => {
    models = makeTinyFunAsrModels(dir);
    // The Paraformer first: FunASR's client names no model, and gets the first served.
    server = new ServeFnServer({ models: [], speechFolders: [models.paraformer, models.senseVoice] });
    base = await server.listen(0, '127.0.0.1');
    client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused' });
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  it("answers the openai SDK's audio.transcriptions.create in every response_format", async () => {
    const expected = referenceTranscript(models.senseVoice, SPEECH_WAVS[0], 'en').text;
    const file = (): ReturnType<typeof createReadStream> => createReadStream(SPEECH_WAVS[0]);
    const json = await client.audio.transcriptions.create({ file: file(), model: 'SenseVoiceSmall-tiny', language: 'en' });
    expect(json).toEqual({ text: expected, usage: { type: 'duration', seconds: 3 } });
    const text = await client.audio.transcriptions.create({ file: file(), model: 'SenseVoiceSmall-tiny', language: 'en', response_format: 'text' });
    expect(text).toBe(expected);
    const srt = await client.audio.transcriptions.create({ file: file(), model: 'SenseVoiceSmall-tiny', language: 'en', response_format: 'srt' });
    expect(srt).toBe(`1\n00:00:00,000 --> 00:00:02,990\n${expected}\n`);
    const vtt = await client.audio.transcriptions.create({ file: file(), model: 'SenseVoiceSmall-tiny', language: 'en', response_format: 'vtt' });
    expect(vtt).toBe(`WEBVTT\n\n00:00:00.000 --> 00:00:02.990\n${expected}\n`);
    const verbose = await client.audio.transcriptions.create({ file: file(), model: 'SenseVoiceSmall-tiny', language: 'en', response_format: 'verbose_json', timestamp_granularities: ['segment'] });
    expect(verbose).toMatchObject({ language: 'english', duration: 2.99, text: expected, segments: [{ id: 0, start: 0, end: 2.99, text: expected }] });
    const stream = await client.audio.transcriptions.create({ file: file(), model: 'SenseVoiceSmall-tiny', language: 'en', stream: true });
    const events = [];
    for await (const event of stream) events.push(event);
    expect(events).toEqual([{ type: 'transcript.text.delta', delta: expected }, { type: 'transcript.text.done', text: expected, usage: { type: 'duration', seconds: 3 } }]);
  });

  it("gives the openai SDK OpenAI's error for an unknown model", async () => {
    const failure = await client.audio.transcriptions.create({ file: createReadStream(SPEECH_WAVS[0]), model: 'whisper-1' }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(OpenAI.NotFoundError);
    expect((failure as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({ type: 'invalid_request_error', code: 'SF_ERR_SPEECH_MODEL_UNKNOWN' });
  });

  it.skipIf(!FUNASR_CLIENT).each(['offline', '2pass'])("works with FunASR's own funasr_wss_client.py in %s mode (set FUNASR_CHECKOUT to a FunASR checkout)", async (mode) => {
    expect(existsSync(FUNASR_CLIENT!), FUNASR_CLIENT).toBe(true);
    const expected = referenceTranscript(models.paraformer, SPEECH_WAVS[2]).text;
    const port = new URL(base).port;
    const args = [FUNASR_CLIENT!, '--host', '127.0.0.1', '--port', port, '--mode', mode, '--audio_in', SPEECH_WAVS[2], '--ssl', '0', '--log_dir', mkdtempSync(join(tmpdir(), 'funasr-client-'))];
    const { stdout } = await promisify(execFile)(process.env.FUNASR_PYTHON ?? SPEECH_PYTHON, args, { timeout: 60_000 });
    const printed = stdout.split('\n').filter((l) => l.startsWith('pid0_0: ')).at(-1);
    expect(printed).toBe(mode === 'offline' ? `pid0_0: demo: ${expected}` : `pid0_0: ${expected}`);
  }, 90_000);
});
