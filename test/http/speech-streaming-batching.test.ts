import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wavefile from 'wavefile';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { makeTinyStreamingParaformer, missingPython, referenceStreaming, SPEECH_WAVS } from '../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
/** chunk_size [5, 10, 5]: the WebSocket session hands the streaming model 600 ms at a time. */
const CHUNK_SAMPLES = 9600;
/** Four different recordings, streamed at once. */
const WAVS = [SPEECH_WAVS[0], SPEECH_WAVS[3], SPEECH_WAVS[5], SPEECH_WAVS[7]];

interface Reply {
  readonly mode: string;
  readonly text: string;
  readonly is_final: boolean;
}

describe.skipIf(missing)(`chunks of concurrent streams batched across streams${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let streaming = '';
  let server: ServeFnServer;
  let base = '';

  beforeAll(async () => {
    streaming = makeTinyStreamingParaformer(mkdtempSync(join(tmpdir(), 'speech-xstream-')));
    // A long queue delay: every stream's chunk joins the pass, however loaded the machine (the wait ends as soon as they are all ready).
    server = new ServeFnServer({ models: [], speechFolders: [streaming], speech: { maxQueueDelayUs: 500_000 } });
    base = await server.listen(0, '127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  function pcmOf(file: string): Uint8Array {
    const samples = new wavefile.WaveFile(readFileSync(file)).getSamples(false, Int16Array) as unknown as Int16Array;
    return new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength);
  }

  /** One FunASR WebSocket utterance in mode online: config, PCM in 100 ms frames, end; the replies until is_final. */
  function online(wav: string): Promise<Reply[]> {
    const socket = new WebSocket(`${base.replace('http', 'ws')}/`);
    const pcm = pcmOf(wav);
    const replies: Reply[] = [];
    return new Promise((resolve, reject) => {
      socket.on('error', reject);
      socket.on('message', (data) => {
        const reply = JSON.parse(String(data)) as Reply;
        replies.push(reply);
        if (reply.is_final) {
          socket.close();
          resolve(replies);
        }
      });
      socket.on('close', () => resolve(replies));
      socket.on('open', () => {
        socket.send(JSON.stringify({ mode: 'online', wav_name: 'w', chunk_size: [5, 10, 5], is_speaking: true }));
        for (let at = 0; at < pcm.length; at += 3200) socket.send(pcm.subarray(at, at + 3200));
        socket.send(JSON.stringify({ is_speaking: false }));
      });
    });
  }

  /** Executions of the streaming model by rows, from its KServe v2 statistics. */
  async function executionsByRows(): Promise<Map<number, number>> {
    const stats = (await (await fetch(`${base}/v2/models/ParaformerStreaming-tiny/stats`)).json()) as { model_stats: { batch_stats: { batch_size: number; compute_infer: { count: number } }[] }[] };
    return new Map(stats.model_stats[0].batch_stats.map((b) => [b.batch_size, b.compute_infer.count]));
  }

  it('answers four concurrent streams with the partial and final texts of each alone, in passes of several streams', async () => {
    const alone: Reply[][] = [];
    for (const wav of WAVS) alone.push(await online(wav));
    // Alone, each stream's passes are one row, and its texts are the numpy reference's.
    expect([...(await executionsByRows()).keys()]).toEqual([1]);
    for (const [i, wav] of WAVS.entries()) expect(alone[i].map((r) => r.text)).toEqual(referenceStreaming(streaming, wav, CHUNK_SAMPLES).texts.filter((t) => t !== ''));
    const before = await executionsByRows();
    const together = await Promise.all(WAVS.map((wav) => online(wav)));
    expect(together).toEqual(alone);
    const after = await executionsByRows();
    const batched = [...after].filter(([rows, count]) => rows > 1 && count > (before.get(rows) ?? 0));
    expect(batched.length, JSON.stringify([...after])).toBeGreaterThan(0);
  }, 120_000);

  it("serves the wait as Triton's direct strategy in the model's config, from speech: { maxQueueDelayUs }", async () => {
    const config = (await (await fetch(`${base}/v2/models/ParaformerStreaming-tiny/config`)).json()) as { max_batch_size: number; sequence_batching: { direct: unknown } };
    expect(config.max_batch_size).toBe(8);
    expect(config.sequence_batching.direct).toEqual({ max_queue_delay_microseconds: 500_000, minimum_slot_utilization: 1 });
  });
});
