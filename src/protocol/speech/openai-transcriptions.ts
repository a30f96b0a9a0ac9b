import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createError } from '../../errors/index.js';
import type { ServerSpeechModels } from '../../speech/server-speech-models.js';
import type { Transcription } from '../../speech/transcription.js';
import { disconnectSignal } from '../../server/disconnect-signal.js';
import { readMultipartForm } from './multipart-form.js';
import { toSrt, toVtt, type TimedText } from './subtitles.js';

const FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'] as const;
type ResponseFormat = (typeof FORMATS)[number];
const GRANULARITIES = ['word', 'segment'];
/** verbose_json's `language` is a name, as OpenAI writes it (Whisper's language names). */
const LANGUAGE_NAMES: Readonly<Record<string, string>> = { zh: 'chinese', en: 'english', yue: 'cantonese', ja: 'japanese', ko: 'korean' };

function badField(param: string, message: string): Error {
  return Object.assign(createError('SF_ERR_BAD_REQUEST', message), { param });
}

/**
 * OpenAI's `POST /v1/audio/transcriptions` (API reference, "Create transcription"; openai-python's
 * types/audio/transcription*.py) over the served speech models: multipart `file` and `model`,
 * `language` (SenseVoice's language query), `prompt` and `temperature` accepted and unused (these
 * models take no prompt and decode greedily), `response_format` json / text / srt / vtt /
 * verbose_json, `timestamp_granularities[]` (verbose_json only, as OpenAI), `stream` with
 * `transcript.text.delta` / `transcript.text.done` events. `usage` is `{type: "duration", seconds}`.
 * With an FSMN-VAD model chained, `segments` (verbose_json, srt, vtt) are its segments; without one the
 * audio is one segment, from 0 to its duration.
 */
export function openAiTranscriptionRoute(scope: FastifyInstance, models: ServerSpeechModels): void {
  scope.post('/v1/audio/transcriptions', async (request: FastifyRequest, reply: FastifyReply) => {
    const form = await readMultipartForm(request, 'file');
    const field = (name: string): string | undefined => form.fields.get(name)?.at(-1);
    if (!form.file) throw badField('file', "the audio file is missing: send it in the multipart field 'file'");
    const modelName = field('model');
    if (modelName === undefined || modelName === '') throw badField('model', "'model' is required: name the served speech model");
    const model = models.find(modelName);
    const format = (field('response_format') ?? 'json') as ResponseFormat;
    if (!FORMATS.includes(format)) throw badField('response_format', `response_format must be one of ${FORMATS.join(', ')} (got '${format}')`);
    const granularities = [...(form.fields.get('timestamp_granularities[]') ?? []), ...(form.fields.get('timestamp_granularities') ?? [])];
    const unknown = granularities.find((g) => !GRANULARITIES.includes(g));
    if (unknown !== undefined) throw badField('timestamp_granularities', `timestamp_granularities must be 'word' or 'segment' (got '${unknown}')`);
    if (granularities.length > 0 && format !== 'verbose_json') throw badField('timestamp_granularities', 'timestamp_granularities needs response_format verbose_json');
    const stream = parseBoolean(field('stream'), 'stream');
    if (stream && format !== 'json' && format !== 'text') throw badField('stream', `stream takes response_format json or text (got '${format}')`);
    const disconnect = disconnectSignal(reply);
    const result = await model.transcribe({ audio: form.file.bytes, language: field('language'), signal: disconnect.signal }).finally(() => disconnect.release());
    if (granularities.includes('word') && !result.words) {
      throw badField('timestamp_granularities', `model '${model.info.name}' (${model.folder.kind}) gives no word timestamps; a BiCifParaformer export does`);
    }
    const usage = { type: 'duration', seconds: Math.ceil(result.duration) };
    // The VAD's segments when a VAD model is chained (speech-chain.ts), else the whole audio as one.
    const segments: readonly TimedText[] = result.segments ?? [{ start: 0, end: result.duration, text: result.text }];
    if (stream) return streamEvents(reply, result, usage);
    switch (format) {
      case 'text':
        return reply.type('text/plain; charset=utf-8').send(result.text);
      case 'srt':
        return reply.type('text/plain; charset=utf-8').send(toSrt(segments));
      case 'vtt':
        return reply.type('text/vtt; charset=utf-8').send(toVtt(segments));
      case 'verbose_json':
        return verbose(result, segments, granularities, usage);
      default:
        return { text: result.text, usage };
    }
  });
}

function verbose(result: Transcription, segments: readonly TimedText[], granularities: readonly string[], usage: object): object {
  const withSegments = granularities.length === 0 || granularities.includes('segment');
  return {
    task: 'transcribe',
    language: (result.language && LANGUAGE_NAMES[result.language]) ?? result.language ?? 'unknown',
    duration: result.duration,
    text: result.text,
    ...(withSegments ? { segments: segments.map((s, id) => ({ id, seek: 0, start: s.start, end: s.end, text: s.text, tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 0, no_speech_prob: 0 })) } : {}),
    ...(granularities.includes('word') ? { words: result.words } : {}),
    usage,
  };
}

/** The whole text as one delta, then done: the models decode a whole utterance at once. */
function streamEvents(reply: FastifyReply, result: Transcription, usage: object): FastifyReply {
  const events = [
    ...(result.text === '' ? [] : [{ type: 'transcript.text.delta', delta: result.text }]),
    { type: 'transcript.text.done', text: result.text, usage },
  ];
  return reply.type('text/event-stream; charset=utf-8').header('cache-control', 'no-cache').send(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(''));
}

function parseBoolean(value: string | undefined, param: string): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw badField(param, `${param} must be true or false (got '${value}')`);
}
