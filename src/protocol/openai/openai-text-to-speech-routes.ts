import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { createError, ServeFnError } from '../../errors/index.js';
import type { InferenceModel } from '../../inference/inference-model.js';
import { disconnectSignal } from '../../server/disconnect-signal.js';
import { installOpenAiErrorHandling } from './openai-errors.js';
import { FieldError, requestBody } from './openai-fields.js';

/**
 * Whether a model is a text-to-speech model, served on OpenAI's `POST /v1/audio/speech` (not to be
 * confused with the FunASR speech-recognition models of src/speech/): a KServe v2 interface (a `@Tensors` class, a
 * repository model) with a BYTES `text` input and an FP32 `audio` output (mono samples in [-1, 1]);
 * the request's `voice` and `speed` go as request parameters, and a `sample_rate` response parameter
 * names the rate (24000, vLLM-Omni's, when absent).
 */
export function isTextToSpeechModel(model: InferenceModel): boolean {
  const { inputs, outputs } = model.info;
  return inputs.some((t) => t.name === 'text' && t.datatype === 'BYTES') && outputs.some((t) => t.name === 'audio' && t.datatype === 'FP32');
}

const DEFAULT_SAMPLE_RATE = 24000;
/** Formats encoded here; mp3, opus, aac and flac need an encoder serve-fn does not ship (400). */
const FORMATS = ['wav', 'pcm'] as const;
/** Samples per `speech.audio.delta` event: 100 ms at 24 kHz. */
const DELTA_SAMPLES = 2400;

export interface TextToSpeechRoutesOptions {
  readonly models: () => readonly InferenceModel[];
  readonly exposeErrors: boolean;
  readonly bodyLimit: number;
}

/**
 * OpenAI's speech API (platform.openai.com/docs/api-reference/audio/createSpeech) over the served
 * text-to-speech models: `model`, `input` (up to 4096 characters), `voice`, `response_format`
 * `wav` (default here) or `pcm` (16-bit little-endian mono), `speed` 0.25–4, `stream_format`
 * `audio` (the bytes) or `sse` (`speech.audio.delta` events with base64 PCM, then `speech.audio.done`).
 */
export async function textToSpeechRoutes(app: FastifyInstance, opts: TextToSpeechRoutesOptions): Promise<void> {
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  installOpenAiErrorHandling(app, { flavour: 'openai', exposeErrors: opts.exposeErrors, bodyLimit: opts.bodyLimit });
  app.post('/v1/audio/speech', { schema: { summary: 'Create speech (OpenAI)', tags: ['OpenAI-compatible audio'] } }, async (request, reply) => {
    const body = requestBody(request.body);
    const speaking = opts.models().filter(isTextToSpeechModel);
    const name = body.model;
    if (typeof name !== 'string') throw new FieldError('model', '`model` is required');
    const model = speaking.find((m) => m.info.name === name);
    if (!model) throw Object.assign(new ServeFnError('SF_ERR_NOT_FOUND', `The model '${name}' does not exist (served text-to-speech models: ${speaking.map((m) => m.info.name).join(', ')})`, 404), { param: 'model' });
    const input = body.input;
    if (typeof input !== 'string' || input.length === 0 || input.length > 4096) throw new FieldError('input', '`input` must be a text of 1 to 4096 characters');
    const voice = body.voice;
    const voiceName = typeof voice === 'string' ? voice : voice && typeof voice === 'object' && typeof (voice as { id?: unknown }).id === 'string' ? (voice as { id: string }).id : undefined;
    if (voiceName === undefined) throw new FieldError('voice', '`voice` is required: a name, or {"id": ...}');
    const format = body.response_format ?? 'wav';
    if (!FORMATS.includes(format as (typeof FORMATS)[number])) throw new FieldError('response_format', `\`response_format\` must be one of 'wav', 'pcm' (mp3, opus, aac and flac are not encoded by serve-fn)`);
    const speed = body.speed ?? 1;
    if (typeof speed !== 'number' || !(speed >= 0.25 && speed <= 4)) throw new FieldError('speed', '`speed` must be a number from 0.25 to 4');
    const streamFormat = body.stream_format ?? 'audio';
    if (streamFormat !== 'audio' && streamFormat !== 'sse') throw new FieldError('stream_format', "`stream_format` must be 'audio' or 'sse'");
    const response = await model.infer({
      inputs: [{ name: 'text', datatype: 'BYTES', shape: [1], data: [Buffer.from(input, 'utf8')] }],
      outputs: [{ name: 'audio' }],
      parameters: { voice: voiceName, speed },
      signal: disconnectSignal(reply) as unknown as AbortSignal,
    });
    const audio = response.outputs.find((t) => t.name === 'audio');
    if (!audio) throw createError('SF_ERR_EXECUTION_FAILED', name, 'text to speech', 'the model answered no audio');
    const rate = typeof response.parameters?.sample_rate === 'number' ? response.parameters.sample_rate : DEFAULT_SAMPLE_RATE;
    const pcm = toPcm16(audio.data as Float32Array);
    if (streamFormat === 'sse') {
      const out = new PassThrough();
      for (let i = 0; i < pcm.length; i += DELTA_SAMPLES * 2) {
        out.write(`event: speech.audio.delta\ndata: ${JSON.stringify({ type: 'speech.audio.delta', audio: pcm.subarray(i, i + DELTA_SAMPLES * 2).toString('base64') })}\n\n`);
      }
      out.end(`event: speech.audio.done\ndata: ${JSON.stringify({ type: 'speech.audio.done', usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } })}\n\n`);
      return reply.header('cache-control', 'no-cache').type('text/event-stream').send(out);
    }
    return format === 'pcm' ? reply.type('audio/pcm').send(pcm) : reply.type('audio/wav').send(Buffer.concat([wavHeader(pcm.length, rate), pcm]));
  });
}

/** Float samples to 16-bit little-endian PCM, clipped to [-1, 1]. */
function toPcm16(samples: Float32Array): Buffer {
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i])) * 32767), i * 2);
  return out;
}

/**
 * The 44-byte RIFF/WAVE header of 16-bit mono PCM (the canonical WAVE layout). Hand-written: it is
 * a dozen fixed fields, and wavefile is only a dev dependency of serve-fn (its examples).
 */
function wavHeader(dataBytes: number, rate: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}
