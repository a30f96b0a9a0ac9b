import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import wavefile from 'wavefile';
import WebSocket from 'ws';

/** A result frame of FunASR's protocol (the server side's FunAsrReply). */
export interface FunAsrClientReply {
  readonly mode: string;
  readonly text: string;
  readonly wav_name: string;
  readonly is_final: boolean;
  readonly timestamp?: string;
  readonly is_end?: boolean;
}

export interface FunAsrClientOptions {
  readonly mode: 'offline' | 'online' | '2pass';
  /** Default [5, 10, 5]: 600 ms chunks. */
  readonly chunkSize?: readonly [number, number, number];
  /** Frames per chunk, default 10: with [5, 10, 5] a frame is 60 ms = 1920 bytes, as FunASR's client sends. */
  readonly chunkInterval?: number;
  readonly wavName?: string;
  readonly hotwords?: string;
  readonly itn?: boolean;
  /** 1 sends in real time (one frame per frame duration), 4 four times faster, 0 without pauses. */
  readonly speed?: number;
}

export interface TimedReply {
  readonly reply: FunAsrClientReply;
  /** Since the connection opened. */
  readonly atMs: number;
}

export interface FunAsrStreamResult {
  readonly replies: readonly TimedReply[];
  /** When `{"is_speaking": false}` was sent, since the connection opened. */
  readonly endSentMs: number;
}

const SAMPLE_RATE = 16_000;

/**
 * Streams 16 kHz 16-bit mono PCM to a FunASR-protocol server as funasr_wss_client.py does: the
 * configuration frame, binary frames of 60 × chunk_size[1] / chunk_interval ms, then
 * `{"is_speaking": false}`. Resolves with every reply once the final one arrives, then closes.
 */
export async function streamPcm(url: string, pcm: Uint8Array, options: FunAsrClientOptions): Promise<FunAsrStreamResult> {
  const chunkSize = options.chunkSize ?? [5, 10, 5];
  const chunkInterval = options.chunkInterval ?? 10;
  const frameMs = (60 * chunkSize[1]) / chunkInterval;
  const frameBytes = Math.round((frameMs * SAMPLE_RATE * 2) / 1000);
  const speed = options.speed ?? 1;
  // FunASR's servers offer the "binary" subprotocol and its clients ask for it.
  const socket = new WebSocket(url, ['binary']);
  const replies: TimedReply[] = [];
  let opened = 0;
  const finished = new Promise<void>((resolve, reject) => {
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      const reply = JSON.parse(String(data)) as FunAsrClientReply;
      replies.push({ reply, atMs: performance.now() - opened });
      if (reply.is_final) resolve();
    });
    socket.on('close', (code, reason) => reject(new Error(`the server closed the connection before the final reply (${code} ${String(reason)})`)));
    socket.on('error', reject);
  });
  // Attached before any await so an early close is not an unhandled rejection.
  finished.catch(() => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  opened = performance.now();
  socket.send(JSON.stringify({
    mode: options.mode, chunk_size: chunkSize, chunk_interval: chunkInterval, wav_name: options.wavName ?? 'demo',
    wav_format: 'pcm', audio_fs: SAMPLE_RATE, is_speaking: true, hotwords: options.hotwords ?? '', itn: options.itn ?? true,
  }));
  for (let at = 0; at < pcm.length; at += frameBytes) {
    socket.send(pcm.subarray(at, at + frameBytes));
    // Paced against the clock rather than by fixed sleeps, so send time does not add up.
    if (speed > 0) await sleep(Math.max(0, opened + (at / (2 * SAMPLE_RATE)) * 1000 / speed + frameMs / speed - performance.now()));
  }
  socket.send(JSON.stringify({ is_speaking: false }));
  const endSentMs = performance.now() - opened;
  try {
    await finished;
  } finally {
    socket.close(1000);
  }
  return { replies, endSentMs };
}

/** Reads a WAV file of any rate, depth and channel count into 16 kHz 16-bit little-endian mono PCM. */
export function wavToPcm16k(bytes: Uint8Array): Uint8Array {
  const wav = new wavefile.WaveFile(bytes);
  const fmt = wav.fmt as { numChannels: number; sampleRate: number };
  if (fmt.sampleRate !== SAMPLE_RATE) wav.toSampleRate(SAMPLE_RATE);
  if (wav.bitDepth !== '16') wav.toBitDepth('16');
  const raw = wav.getSamples(false, Int16Array) as unknown as Int16Array | Int16Array[];
  const channels = Array.isArray(raw) ? raw : [raw];
  const mono = new Int16Array(channels[0].length);
  for (let i = 0; i < mono.length; i++) mono[i] = Math.round(channels.reduce((sum, c) => sum + c[i], 0) / channels.length);
  const pcm = new Uint8Array(mono.length * 2);
  const view = new DataView(pcm.buffer);
  mono.forEach((s, i) => view.setInt16(2 * i, s, true));
  return pcm;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { mode: { type: 'string', default: '2pass' }, speed: { type: 'string', default: '1' }, 'chunk-size': { type: 'string', default: '5,10,5' } },
  });
  const [url, file] = positionals;
  if (!url || !file) throw new Error('usage: client.ts <ws://host:port/ws/asr> <file.wav> [--mode offline|online|2pass] [--speed 1] [--chunk-size 5,10,5]');
  const [back, chunk, ahead] = values['chunk-size'].split(',').map(Number);
  const result = await streamPcm(url, wavToPcm16k(readFileSync(file)), {
    mode: values.mode as FunAsrClientOptions['mode'],
    chunkSize: [back, chunk, ahead],
    speed: Number(values.speed),
    wavName: file,
  });
  for (const { reply, atMs } of result.replies) console.log(`${(atMs / 1000).toFixed(2).padStart(6)} s  ${JSON.stringify(reply)}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: Error) => {
    console.error(err.message);
    process.exitCode = 1;
  });
}
