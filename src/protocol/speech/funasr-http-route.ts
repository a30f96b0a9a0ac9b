import type { FastifyInstance } from 'fastify';
import { parseHotwords } from '../../adapters/funasr/funasr-session.js';
import { createError } from '../../errors/index.js';
import type { ServerSpeechModels } from '../../speech/server-speech-models.js';
import { readMultipartForm } from './multipart-form.js';

/**
 * FunASR's HTTP server's answer (runtime/http/bin: a multipart upload of one audio file, answered
 * with the offline result as its WebSocket server writes it: `text`, `mode: "offline"`,
 * `is_final: false`, `wav_name`, and `timestamp` / `stamp_sents` when the model gives token times),
 * at `POST /recognition`, the path of FunASR's Python HTTP server (runtime/python/http/server.py).
 * Fields: the file (any field name), optional `model` when several speech models are served,
 * `wav_name`, `audio_fs` with `wav_format: pcm` for raw 16-bit PCM, `svs_lang`, `svs_itn`, `itn`.
 * `hotwords` (FunASR's JSON of word → weight, or words separated by spaces) need a contextual
 * Paraformer (SeACo, with its `model_eb.onnx`), which no served model is: non-empty ones are refused
 * with a 400, as the WebSocket route refuses them, rather than silently ignored.
 */
export function funAsrHttpRoute(scope: FastifyInstance, models: ServerSpeechModels): void {
  scope.post('/recognition', async (request) => {
    const form = await readMultipartForm(request, undefined);
    const field = (name: string): string | undefined => form.fields.get(name)?.at(-1);
    if (!form.file) throw createError('SF_ERR_BAD_REQUEST', 'the audio file is missing: send it as a multipart file');
    const hotwords = field('hotwords');
    if (hotwords !== undefined && parseHotwords(hotwords).length > 0) throw createError('SF_ERR_BAD_REQUEST', 'hotwords need a contextual Paraformer (model_eb.onnx), which is not served; send no hotwords.');
    const model = models.find(field('model'));
    const pcm = field('wav_format')?.toLowerCase() === 'pcm';
    const sampleRate = pcm ? Number(field('audio_fs') ?? 16000) : undefined;
    const itn = (field('svs_itn') ?? field('itn')) !== 'false';
    const result = await model.transcribe({ audio: form.file.bytes, sampleRate, language: field('svs_lang'), itn });
    const wavName = field('wav_name') ?? form.file.filename ?? 'wav-default-id';
    return {
      text: model.folder.kind === 'SenseVoiceSmall' ? result.richText : result.text,
      mode: 'offline',
      is_final: false,
      wav_name: wavName,
      ...(result.timestamp ? { timestamp: JSON.stringify(result.timestamp) } : {}),
      ...(result.stampSents ? { stamp_sents: result.stampSents } : {}),
    };
  });
}
