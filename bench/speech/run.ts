import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backendForFile } from '../../src/backends/backend-for-file.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { decodeAudioFile } from '../../src/speech/audio-input.js';
import { readSpeechFolder } from '../../src/speech/speech-folder.js';
import { SpeechFrontEnd } from '../../src/speech/speech-front-end.js';
import { SpeechRecognizer } from '../../src/speech/speech-recognizer.js';
import WebSocket from 'ws';
import { makeTinyFunAsrModels, makeTinyStreamingParaformer, SPEECH_PYTHON, SPEECH_WAVS } from '../../test/helpers/speech-python.js';

/**
 * Issue 27's speech benchmark, in one run on one machine, on the tiny SenseVoice-shaped export the
 * tests build (a linear layer per frame: the front end, not the model, sets the cost, so this
 * measures serve-fn's own work) and eight real recordings (pocketsphinx-testdata, 1.1–7.1 s):
 * (1) the front end (Kaldi fbank, LFR, CMVN): seconds of audio per CPU-second, in TypeScript in this
 *     process and through torchaudio + numpy in Python on one thread;
 * (2) served transcription (POST /v1/audio/transcriptions) real-time factor with 1 and 8 concurrent
 *     streams, each sending one recording after another, vs the same model run in this process;
 * (3) at 8 concurrent streams, audio seconds per wall second with batches of up to 8 vs 1 (unbatched);
 * (4) streaming (FunASR's WebSocket, mode online, chunk_size [5, 10, 5]) on the tiny streaming
 *     Paraformer export the tests build: real-time factor per stream with 1 and 8 concurrent
 *     streams, each sending one recording after another as fast as the server answers, with the
 *     chunks of concurrent streams batched into one pass (up to 8) vs one chunk at a time (1).
 */
const durationS = Number(process.env.DURATION_S ?? 8);
const here = fileURLToPath(new URL('.', import.meta.url));
const models = makeTinyFunAsrModels(mkdtempSync(join(tmpdir(), 'bench-speech-')));
const wavs = SPEECH_WAVS.map((file) => readFileSync(file));
const audios = wavs.map((bytes) => decodeAudioFile(bytes));

function cpuS(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

// (1) front end
const folder = readSpeechFolder(models.senseVoice);
const frontEnd = new SpeechFrontEnd(folder.frontEnd, folder.cmvn);
let audioS = 0;
const cpuStart = cpuS();
while (cpuS() - cpuStart < durationS) {
  for (const audio of audios) {
    frontEnd.compute(audio.samples);
    audioS += audio.seconds;
  }
}
const tsRate = audioS / (cpuS() - cpuStart);
const pyRate = Number(execFileSync(SPEECH_PYTHON, [join(here, 'torchaudio-front-end.py'), String(durationS), ...SPEECH_WAVS], { encoding: 'utf8' }).trim());
console.log(`front end: TypeScript ${tsRate.toFixed(0)} s of audio per CPU-second; torchaudio + numpy (1 thread) ${pyRate.toFixed(0)}`);

// (2) in-process reference: one utterance at a time on this thread, after one warm-up pass
const session = await (await backendForFile(folder.modelFile, { kind: 'cpu', id: 0 })).load(folder.modelFile, { device: { kind: 'cpu', id: 0 }, options: { intraOpNumThreads: 1 } });
const recognizer = new SpeechRecognizer(folder, session);
for (const audio of audios) await recognizer.transcribe([{ samples: audio.samples, duration: audio.seconds }]);
let inProcessWall = 0;
let inProcessAudio = 0;
const inStart = performance.now();
while ((performance.now() - inStart) / 1000 < durationS) {
  for (const [i, bytes] of wavs.entries()) {
    const t0 = performance.now();
    const audio = decodeAudioFile(bytes);
    await recognizer.transcribe([{ samples: audio.samples, duration: audio.seconds }]);
    inProcessWall += (performance.now() - t0) / 1000;
    inProcessAudio += audios[i].seconds;
  }
}
await session.dispose();
console.log(`in-process: RTF ${(inProcessWall / inProcessAudio).toFixed(4)}`);

async function served(maxBatchSize: number, streams: number): Promise<{ rtf: number; throughput: number; executions: number; inferences: number }> {
  const server = new ServeFnServer({ models: [], speechFolders: [models.senseVoice], speech: { maxBatchSize } });
  const base = await server.listen(0, '127.0.0.1');
  const url = `${base}/v1/audio/transcriptions`;
  const name = folder.name;
  const post = async (i: number): Promise<void> => {
    const form = new FormData();
    form.append('file', new Blob([wavs[i % wavs.length]]), 'a.wav');
    form.append('model', name);
    await (await fetch(url, { method: 'POST', body: form })).text();
  };
  // The instance's first calls compile its code; the measurement starts warm, as the in-process one does.
  for (let i = 0; i < wavs.length; i++) await post(i);
  let latency = 0;
  let audio = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: streams }, async (_, s) => {
    for (let i = s; (performance.now() - start) / 1000 < durationS; i++) {
      const t0 = performance.now();
      await post(i);
      latency += (performance.now() - t0) / 1000;
      audio += audios[i % wavs.length].seconds;
    }
  }));
  const wall = (performance.now() - start) / 1000;
  const stats = ((await (await fetch(`${base}/v2/models/${name}/stats`)).json()) as { model_stats: { inference_count: number; execution_count: number }[] }).model_stats[0];
  await server.close();
  // The warm-up requests are in the statistics too.
  return { rtf: latency / audio, throughput: audio / wall, executions: stats.execution_count - wavs.length, inferences: stats.inference_count - wavs.length };
}

for (const streams of [1, 8]) {
  const r = await served(8, streams);
  console.log(`served, ${streams} stream(s), batches up to 8: RTF ${r.rtf.toFixed(4)} per stream, ${r.throughput.toFixed(1)} s of audio per s, ${r.inferences} requests in ${r.executions} forward passes`);
}
const unbatched = await served(1, 8);
console.log(`served, 8 streams, unbatched: RTF ${unbatched.rtf.toFixed(4)} per stream, ${unbatched.throughput.toFixed(1)} s of audio per s, ${unbatched.inferences} requests in ${unbatched.executions} forward passes`);

// (4) streaming: one WebSocket utterance in mode online, every 100 ms frame sent at once; the time to its is_final reply.
const streamingFolder = makeTinyStreamingParaformer(mkdtempSync(join(tmpdir(), 'bench-speech-online-')));
const pcms = wavs.map((bytes) => {
  const { samples } = decodeAudioFile(bytes);
  return new Uint8Array(Int16Array.from(samples, (v) => Math.max(-32768, Math.min(32767, Math.round(v * 32768)))).buffer);
});

function onlineUtterance(base: string, pcm: Uint8Array): Promise<void> {
  const socket = new WebSocket(`${base.replace('http', 'ws')}/`);
  return new Promise((resolve, reject) => {
    socket.on('error', reject);
    socket.on('message', (data) => {
      if ((JSON.parse(String(data)) as { is_final?: boolean }).is_final === true) socket.close();
    });
    socket.on('close', () => resolve());
    socket.on('open', () => {
      socket.send(JSON.stringify({ mode: 'online', wav_name: 'bench', chunk_size: [5, 10, 5], is_speaking: true }));
      for (let at = 0; at < pcm.length; at += 3200) socket.send(pcm.subarray(at, at + 3200));
      socket.send(JSON.stringify({ is_speaking: false }));
    });
  });
}

async function streamed(maxBatchSize: number, streams: number): Promise<{ rtf: number; rowsPerPass: number }> {
  const server = new ServeFnServer({ models: [], speechFolders: [streamingFolder], speech: { maxBatchSize } });
  const base = await server.listen(0, '127.0.0.1');
  for (const pcm of pcms) await onlineUtterance(base, pcm);
  const statsOf = async (): Promise<{ inference_count: number; execution_count: number }> => ((await (await fetch(`${base}/v2/models/ParaformerStreaming-tiny/stats`)).json()) as { model_stats: { inference_count: number; execution_count: number }[] }).model_stats[0];
  const warm = await statsOf();
  let latency = 0;
  let audio = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: streams }, async (_, s) => {
    for (let i = s; (performance.now() - start) / 1000 < durationS; i++) {
      const t0 = performance.now();
      await onlineUtterance(base, pcms[i % pcms.length]);
      latency += (performance.now() - t0) / 1000;
      audio += audios[i % audios.length].seconds;
    }
  }));
  const stats = await statsOf();
  await server.close();
  return { rtf: latency / audio, rowsPerPass: (stats.inference_count - warm.inference_count) / Math.max(1, stats.execution_count - warm.execution_count) };
}

for (const streams of [1, 8]) {
  const batched = await streamed(8, streams);
  const single = await streamed(1, streams);
  console.log(`streaming online, ${streams} stream(s): batched across streams RTF ${batched.rtf.toFixed(4)} per stream (${batched.rowsPerPass.toFixed(2)} chunks per pass); one chunk at a time RTF ${single.rtf.toFixed(4)} per stream (${single.rowsPerPass.toFixed(2)})`);
}
