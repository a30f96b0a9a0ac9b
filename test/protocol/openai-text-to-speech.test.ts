import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTensor, Instances, Model, Tensors, type ExecuteRequest, type ExecuteResponse } from '../../src/index.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';

/**
 * A TTS-shaped decorated class (the quickstart's CosyVoice shape, tiny): text in, audio out — one
 * 1 ms tone burst per character at 16 kHz, louder for the voice 'loud', shorter with speed.
 */
@Model({ name: 'tiny-tts' })
@Instances(1, { inline: true })
@Tensors({ inputs: [{ name: 'text', datatype: 'BYTES', dims: [1] }], outputs: [{ name: 'audio', datatype: 'FP32', dims: [-1] }] })
export class TinyTts {
  execute(requests: ExecuteRequest[]): ExecuteResponse[] {
    return requests.map((request) => {
      const text = Buffer.from((request.input('text')!.data as Uint8Array[])[0]).toString('utf8');
      const speed = Number(request.parameters.speed ?? 1);
      const amplitude = request.parameters.voice === 'loud' ? 0.5 : 0.25;
      const perChar = Math.round(16 / speed);
      const audio = Float32Array.from({ length: text.length * perChar }, (_, i) => amplitude * (i % 2 === 0 ? 1 : -1));
      return { outputs: [createTensor('audio', 'FP32', [audio.length], audio)], parameters: { sample_rate: 16000 } };
    });
  }
}

let server: ServeFnServer;
let client: OpenAI;

beforeAll(async () => {
  server = new ServeFnServer({ models: [TinyTts], logger: false, collectProcessMetrics: false });
  const base = await server.listen(0, '127.0.0.1');
  client = new OpenAI({ apiKey: 'test-key', baseURL: `${base}/v1`, maxRetries: 0 });
});
afterAll(() => server?.close());

describe('openai SDK audio.speech.create against a TTS-shaped decorated class', () => {
  it('answers WAV with the model\'s rate and samples; pcm is the raw 16-bit samples', async () => {
    const wav = Buffer.from(await (await client.audio.speech.create({ model: 'tiny-tts', input: 'hello', voice: 'alloy', response_format: 'wav' })).arrayBuffer());
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.readUInt32LE(24)).toBe(16000);
    expect(wav.readUInt32LE(40)).toBe(5 * 16 * 2);
    expect(wav.readInt16LE(44)).toBe(Math.round(0.25 * 32767));
    const pcm = Buffer.from(await (await client.audio.speech.create({ model: 'tiny-tts', input: 'hi', voice: 'loud', response_format: 'pcm', speed: 2 })).arrayBuffer());
    expect(pcm.length).toBe(2 * 8 * 2);
    expect(pcm.readInt16LE(2)).toBe(Math.round(-0.5 * 32767));
  });

  it('streams speech.audio.delta events then speech.audio.done (stream_format sse)', async () => {
    const response = await client.audio.speech.create({ model: 'tiny-tts', input: 'x'.repeat(400), voice: 'alloy', response_format: 'pcm', stream_format: 'sse' });
    const text = await response.text();
    const events = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]) as { type: string; audio?: string });
    expect(events.at(-1)!.type).toBe('speech.audio.done');
    const deltas = events.filter((e) => e.type === 'speech.audio.delta');
    expect(deltas.length).toBe(3);
    expect(deltas.reduce((sum, e) => sum + Buffer.from(e.audio!, 'base64').length, 0)).toBe(400 * 16 * 2);
  });

  it('errors in OpenAI\'s shape: unknown model 404, unsupported format and speed 400', async () => {
    await expect(client.audio.speech.create({ model: 'tts-1', input: 'x', voice: 'alloy' })).rejects.toBeInstanceOf(NotFoundError);
    const mp3 = await client.audio.speech.create({ model: 'tiny-tts', input: 'x', voice: 'alloy', response_format: 'mp3' }).catch((err: unknown) => err);
    expect([mp3 instanceof BadRequestError, (mp3 as BadRequestError).param]).toEqual([true, 'response_format']);
    const fast = await client.audio.speech.create({ model: 'tiny-tts', input: 'x', voice: 'alloy', speed: 5 }).catch((err: unknown) => err);
    expect((fast as BadRequestError).param).toBe('speed');
  });
});
