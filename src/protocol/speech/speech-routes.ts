import type { FastifyInstance } from 'fastify';
import type { ServerSpeechModels } from '../../speech/server-speech-models.js';
import { installOpenAiErrorHandling } from '../openai/openai-errors.js';
import { funAsrHttpRoute } from './funasr-http-route.js';
import { funAsrSocketRoute } from './funasr-socket-route.js';
import { openAiTranscriptionRoute } from './openai-transcriptions.js';

export interface SpeechRoutesOptions {
  readonly models: ServerSpeechModels;
  readonly exposeErrors: boolean;
  readonly bodyLimit: number;
}

/** The speech models' routes: OpenAI's transcriptions (its error envelope), FunASR's HTTP recognition and its WebSocket protocol at `/`. */
export async function speechRoutes(app: FastifyInstance, opts: SpeechRoutesOptions): Promise<void> {
  await app.register(async (scope) => {
    installOpenAiErrorHandling(scope, { flavour: 'openai', exposeErrors: opts.exposeErrors, bodyLimit: opts.bodyLimit });
    openAiTranscriptionRoute(scope, opts.models);
  });
  await app.register(async (scope) => funAsrHttpRoute(scope, opts.models));
  await app.register(async (scope) => funAsrSocketRoute(scope, opts.models, opts.bodyLimit));
}
