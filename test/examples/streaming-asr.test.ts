import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/index.js';
import { StreamingAsr } from '../../examples/streaming-asr/index.js';
import { streamPcm, wavToPcm16k, type FunAsrClientReply } from '../../examples/streaming-asr/client.js';
import { metricsCounts, statisticsCounts } from '../helpers/statistics-and-metrics.js';

const WAV_PATH = fileURLToPath(new URL('../fixtures/vad/speech.wav', import.meta.url));
const PCM = wavToPcm16k(readFileSync(WAV_PATH));
/**
 * A local checkout of github.com/modelscope/FunASR: when set, its own client,
 * runtime/python/websocket/funasr_wss_client.py, is run against the example (python3 with
 * `websockets`; FUNASR_PYTHON names another interpreter).
 */
const FUNASR_CLIENT = process.env.FUNASR_CHECKOUT && join(process.env.FUNASR_CHECKOUT, 'runtime/python/websocket/funasr_wss_client.py');
/** Where make-speech-wav.sh put the two phrases, in seconds (test/fixtures/vad/README.md). */
const PHRASES = [[0.5, 3.5244], [4.5244, 7.0254]];
/** As in test/examples/vad.test.ts: Silero reacts a window or two late and word endings fade. */
const TOLERANCE_S = 0.15;
const FACTS = /^\[(speech|chunk) (\d+\.\d\d)–(\d+\.\d\d) s, (-\d+) dBFS\]$/;

function facts(reply: FunAsrClientReply): { label: string; from: number; to: number; dbfs: number } {
  const match = FACTS.exec(reply.text);
  expect(match, reply.text).not.toBeNull();
  return { label: match![1], from: Number(match![2]), to: Number(match![3]), dbfs: Number(match![4]) };
}

function expectPhrases(segments: { from: number; to: number }[]): void {
  expect(segments).toHaveLength(2);
  segments.forEach((s, i) => {
    expect(Math.abs(s.from - PHRASES[i][0])).toBeLessThanOrEqual(TOLERANCE_S);
    expect(Math.abs(s.to - PHRASES[i][1])).toBeLessThanOrEqual(TOLERANCE_S);
  });
}

describe('streaming ASR example (FunASR protocol over WebSocket, Silero VAD)', () => {
  let server: ServeFnServer;
  let base: string;
  let url: string;

  beforeAll(async () => {
    server = new ServeFnServer({
      models: [StreamingAsr],
      moduleUrl: new URL('../../examples/streaming-asr/index.ts', import.meta.url).href,
      collectProcessMetrics: false,
    });
    base = (await server.listen(0, '127.0.0.1')).replace(/^http/, 'ws');
    url = `${base}/ws/asr`;
  });

  afterAll(async () => {
    await server?.close();
  });

  // Sent without pauses, in the 60 ms frames FunASR's client sends for chunk_size [5, 10, 5].
  const stream = (mode: 'offline' | 'online' | '2pass', wavName = 'speech.wav') => streamPcm(url, PCM, { mode, wavName, speed: 0 });

  it('offline: one reply per phrase, then an empty final reply, since both phrases end before the stream does', async () => {
    const { replies } = await stream('offline', 'fixture-offline');
    expect(replies.map(({ reply }) => [reply.mode, reply.wav_name, reply.is_final, reply.text === ''])).toEqual([
      ['offline', 'fixture-offline', false, false],
      ['offline', 'fixture-offline', false, false],
      ['offline', 'fixture-offline', true, true],
    ]);
    const segments = replies.slice(0, 2).map(({ reply }) => facts(reply));
    expect(segments.map((s) => s.label)).toEqual(['speech', 'speech']);
    expectPhrases(segments);
    // The espeak-ng phrases are loud (about -20 dBFS); the fixture's noise floor is some 30 dB lower.
    for (const s of segments) expect(s.dbfs).toBeGreaterThan(-30);
  });

  it('online: consecutive 600 ms chunks of each phrase, the last reply final', async () => {
    const { replies } = await stream('online');
    expect(replies.every(({ reply }) => reply.mode === 'online')).toBe(true);
    expect(replies.map(({ reply }) => reply.is_final)).toEqual(replies.map((_, i) => i === replies.length - 1));
    expect(replies.at(-1)!.reply.text).toBe('');
    const chunks = replies.slice(0, -1).map(({ reply }) => facts(reply));
    expect(chunks.every((c) => c.label === 'chunk')).toBe(true);
    // Chunks follow each other without gaps inside a phrase; a gap of more than a chunk separates the phrases.
    const phrases: { from: number; to: number }[] = [];
    for (const c of chunks) {
      const last = phrases.at(-1);
      if (last && Math.abs(c.from - last.to) < 0.011) last.to = c.to;
      else phrases.push({ from: c.from, to: c.to });
      expect(Math.round((c.to - c.from) * 100)).toBeLessThanOrEqual(60);
    }
    expect(phrases).toHaveLength(2);
    for (const [i, p] of phrases.entries()) expect(Math.abs(p.from - PHRASES[i][0])).toBeLessThanOrEqual(TOLERANCE_S);
  });

  it('2pass: 2pass-online partials, then a 2pass-offline reply closing each phrase', async () => {
    const { replies } = await stream('2pass');
    const modes = replies.map(({ reply }) => reply.mode).join(' ');
    expect(modes).toMatch(/^(2pass-online )+2pass-offline (2pass-online )+2pass-offline 2pass-offline$/);
    expect(replies.at(-1)!.reply.text).toBe('');
    const said = replies.slice(0, -1);
    const offline = said.filter(({ reply }) => reply.mode === '2pass-offline').map(({ reply }) => facts(reply));
    expectPhrases(offline);
    expect(replies.map(({ reply }) => reply.is_final)).toEqual(replies.map((_, i) => i === replies.length - 1));
    // Every partial starts inside the phrase its correction covers (the last may run into the silence that closes it).
    let phrase = 0;
    for (const { reply } of said) {
      const f = facts(reply);
      if (reply.mode === '2pass-offline') phrase++;
      else expect([f.from >= offline[phrase].from, f.from < offline[phrase].to]).toEqual([true, true]);
    }
  });

  it('serves concurrent connections, each with its own VAD state', async () => {
    const [a, b, c] = await Promise.all([stream('offline', 'a'), stream('offline', 'b'), stream('2pass', 'c')]);
    for (const [result, name] of [[a, 'a'], [b, 'b']] as const) {
      expect(result.replies.map(({ reply }) => reply.wav_name)).toEqual([name, name, name]);
      expectPhrases(result.replies.slice(0, 2).map(({ reply }) => facts(reply)));
    }
    expect(c.replies.filter(({ reply }) => reply.mode === '2pass-offline' && reply.text !== '')).toHaveLength(2);
  });

  it("serves the same socket at /, where FunASR's own clients connect (ws://host:port), with their 'binary' subprotocol", async () => {
    const socket = new WebSocket(`${base}/`, ['binary']);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    expect(socket.protocol).toBe('binary');
    const replies: FunAsrClientReply[] = [];
    const final = new Promise<void>((resolve) => socket.on('message', (data) => {
      replies.push(JSON.parse(String(data)));
      if (replies.at(-1)!.is_final) resolve();
    }));
    // The frames funasr_wss_client.py sends for a .wav file, end frame included.
    socket.send(JSON.stringify({ mode: 'offline', chunk_size: [5, 10, 5], chunk_interval: 10, encoder_chunk_look_back: 4, decoder_chunk_look_back: 0, audio_fs: 16000, wav_name: 'demo', wav_format: 'pcm', is_speaking: true, hotwords: '', itn: true }));
    for (let at = 0; at < PCM.length; at += 1920) socket.send(PCM.subarray(at, at + 1920));
    socket.send(JSON.stringify({ is_speaking: false, is_end: true }));
    await final;
    socket.close();
    expect(replies.map((r) => [r.mode, r.is_final, r.is_end ?? false])).toEqual([['offline', false, false], ['offline', false, false], ['offline', true, true]]);
    expectPhrases(replies.slice(0, 2).map(facts));
  });

  it.skipIf(!FUNASR_CLIENT)("works with FunASR's own funasr_wss_client.py (set FUNASR_CHECKOUT to a FunASR checkout)", async () => {
    expect(existsSync(FUNASR_CLIENT!), FUNASR_CLIENT).toBe(true);
    const logs = mkdtempSync(join(tmpdir(), 'serve-fn-funasr-client-'));
    try {
      const port = new URL(base).port;
      // As FunASR's README runs it, over ws:// (--ssl 0); the example serves wss:// with SERVE_FN_TLS_CERT / _KEY.
      const args = [FUNASR_CLIENT!, '--host', '127.0.0.1', '--port', port, '--mode', '2pass', '--audio_in', WAV_PATH, '--ssl', '0', '--log_dir', logs];
      const { stdout } = await promisify(execFile)(process.env.FUNASR_PYTHON ?? 'python3', args, { timeout: 60_000 });
      const lines = stdout.split('\n');
      expect(lines).toContain('connect to ws://127.0.0.1:' + port);
      const last = lines.filter((l) => l.startsWith('pid0_0: ')).at(-1)!;
      expect(last).toMatch(/^pid0_0: \[speech \d+\.\d\d–\d+\.\d\d s, -\d+ dBFS\]\[speech \d+\.\d\d–\d+\.\d\d s, -\d+ dBFS\]$/);
      expect(lines.at(-2)).toBe('end');
    } finally {
      rmSync(logs, { recursive: true, force: true });
    }
  }, 90_000);

  it('closes the socket with 1008 and the reason when audio comes before the configuration frame', async () => {
    const socket = new WebSocket(url);
    await new Promise((resolve) => socket.once('open', resolve));
    const closed = new Promise<[number, string]>((resolve) => socket.once('close', (code, reason) => resolve([code, String(reason)])));
    socket.send(PCM.subarray(0, 1920));
    expect(await closed).toEqual([1008, 'FunASR protocol: audio arrived before the configuration frame; send {"mode": ...} first.']);
  });

  it('is a KServe v2 model whose statistics agree with /metrics (WebSocket sessions are not inference requests in either)', async () => {
    const stats = await statisticsCounts(server.app);
    expect(stats).toEqual({ 'asr:1': { success: 0, failure: 0 } });
    expect(stats).toEqual(await metricsCounts(server.app));
    expect((await server.app.inject({ method: 'POST', url: '/v2/repository/index' })).json()).toEqual([{ name: 'asr', version: '1', state: 'READY' }]);
  });
});
