import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { makeTinyFunAsrModels, makeTinyStreamingParaformer, makeTinyVadAndPunctuation, missingPython, SPEECH_WAVS } from '../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
/** Far below the 60 s max_sequence_idle_microseconds after which the sequence batcher would expire a stream anyway. */
const RELEASE_WITHIN_MS = 15_000;

/** A FunASR WebSocket client that goes away mid-stream: its streams' state goes with it, not at the idle expiry. */
describe.skipIf(missing)(`a FunASR client that disconnects mid-stream${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-disconnect-'));
  let server: ServeFnServer;
  let base = '';

  beforeAll(async () => {
    const streaming = makeTinyStreamingParaformer(dir);
    const offline = makeTinyFunAsrModels(dir).paraformer;
    const { vad } = makeTinyVadAndPunctuation(dir);
    server = new ServeFnServer({ models: [], speechFolders: [offline, streaming, vad], logger: false, collectProcessMetrics: false });
    base = await server.listen(0, '127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  /** serve_fn_sequences_live of each stateful model. */
  async function liveSequences(): Promise<Record<string, number>> {
    const text = await (await fetch(`${base}/metrics`)).text();
    return Object.fromEntries([...text.matchAll(/^serve_fn_sequences_live\{model="([^"]+)",version="1"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
  }

  async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await condition()) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return condition();
  }

  /** A 2pass utterance left open: 300 ms online chunks, 1.3 s of audio, so the VAD's second segment (from 900 ms) is open with one online chunk of it sent. */
  async function openStreams(): Promise<WebSocket> {
    const pcm = readFileSync(SPEECH_WAVS[0]).subarray(44);
    const socket = new WebSocket(`${base.replace('http', 'ws')}/`);
    await new Promise((resolve, reject) => socket.on('open', resolve).on('error', reject));
    socket.send(JSON.stringify({ mode: '2pass', wav_name: 'gone', is_speaking: true, chunk_size: [5, 5, 5] }));
    for (let at = 0; at < 1300 * 32; at += 3200) socket.send(pcm.subarray(at, at + 3200));
    // Both streams seen open once: read again, the Paraformer's count can be caught between the
    // VAD's first segment's END and its second's START.
    const open = await until(async () => {
      const live = await liveSequences();
      return live['fsmn-vad-tiny'] === 1 && live['ParaformerStreaming-tiny'] === 1;
    }, 30_000);
    expect(open, 'the VAD and the streaming Paraformer each hold one live stream').toBe(true);
    return socket;
  }

  it('ends its VAD stream and its streaming Paraformer stream at once when the socket is terminated (serve_fn_sequences_live falls to 0)', async () => {
    const socket = await openStreams();
    socket.terminate();
    await until(async () => Object.values(await liveSequences()).every((n) => n === 0), RELEASE_WITHIN_MS);
    expect(await liveSequences()).toEqual({ 'fsmn-vad-tiny': 0, 'ParaformerStreaming-tiny': 0 });
  }, 90_000);

  it('ends them too when the server closes the session for a protocol error mid-stream', async () => {
    const socket = await openStreams();
    const closed = new Promise<number>((resolve) => socket.on('close', resolve));
    // A configuration field inside an open utterance is refused with close code 1008.
    socket.send(JSON.stringify({ mode: 'offline' }));
    expect(await closed).toBe(1008);
    await until(async () => Object.values(await liveSequences()).every((n) => n === 0), RELEASE_WITHIN_MS);
    expect(await liveSequences()).toEqual({ 'fsmn-vad-tiny': 0, 'ParaformerStreaming-tiny': 0 });
  }, 90_000);
});
