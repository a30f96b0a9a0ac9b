import type { FastifyInstance, FastifySchema } from 'fastify';
import type { ServedGenerator } from '../../generation/text-generator.js';
import { createError } from '../../errors/index.js';
import { chatCompletion } from './chat-completions.js';
import { completion } from './completions.js';
import type { GenerationContext } from './generation-context.js';
import { errorResponses, installOpenAiErrorHandling } from './openai-errors.js';
import { registerModelRoutes } from './openai-models.js';
import { detokenize, tokenize } from './tokenize.js';

const TAG = 'OpenAI-compatible generation (vLLM)';

export interface GenerationRoutesOptions {
  /** What GET /version answers. */
  readonly serverVersion: string;
  readonly exposeErrors?: boolean;
  /** The largest request body, in bytes. */
  readonly bodyLimit: number;
  /**
   * Whether the text models' routes are served too: they own GET /v1/models (and list the
   * generators there), TEI's GET /health (which then checks the generators too) and TEI's POST
   * /tokenize, so these routes leave those paths to them.
   */
  readonly textRoutes?: boolean;
}

const BODY = { type: 'object', additionalProperties: true } as const;

function doc(summary: string, description: string, body = true): FastifySchema {
  return { summary, description, tags: [TAG], ...(body ? { body: BODY } : {}), response: { 200: { description: 'Successful Response', type: 'object', additionalProperties: true }, ...errorResponses('vllm') } };
}

/**
 * The routes between OpenAI / vLLM clients and the served generators, as vLLM's OpenAI-compatible
 * server answers them (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html):
 * chat and text completions, /tokenize, /detokenize, /version, /health and /v1/models. Errors are
 * vLLM's `{"error": {message, type, param, code}}` with `code` the HTTP status.
 */
export async function registerGenerationRoutes(app: FastifyInstance, generators: readonly ServedGenerator[], opts: GenerationRoutesOptions): Promise<void> {
  await app.register(async (scope) => {
    // The schemas document; bodies are read field by field (request-fields.ts) so that errors keep
    // vLLM's shape and unread fields can be named.
    scope.setValidatorCompiler(() => () => true);
    scope.setSerializerCompiler(() => (data) => JSON.stringify(data));
    const errors = { flavour: 'vllm' as const, exposeErrors: opts.exposeErrors ?? false, bodyLimit: opts.bodyLimit };
    installOpenAiErrorHandling(scope, errors);
    const ctx: GenerationContext = { generators, errors };
    const bodyLimit = opts.bodyLimit;
    const streams = 'With `stream: true`, Server-Sent Events: `data: {chunk}` events, then `data: [DONE]`.';
    scope.post('/v1/chat/completions', { schema: doc('Create a chat completion (OpenAI / vLLM)', streams), bodyLimit }, (request, reply) => chatCompletion(request, reply, ctx));
    scope.post('/v1/completions', { schema: doc('Create a completion (OpenAI / vLLM)', streams), bodyLimit }, (request, reply) => completion(request, reply, ctx));
    if (!opts.textRoutes) scope.post('/tokenize', { schema: doc('Tokenize a prompt or a chat (vLLM)', 'Answers `{count, max_model_len, tokens}`.'), bodyLimit }, (request, reply) => tokenize(request, reply, ctx));
    scope.post('/detokenize', { schema: doc('Detokenize token ids (vLLM)', 'Answers `{prompt}`.'), bodyLimit }, (request, reply) => detokenize(request, reply, ctx));
    scope.get('/version', { schema: doc('Server version (vLLM)', 'Answers `{version}`: serve-fn’s version.', false) }, async () => ({ version: opts.serverVersion }));
    if (!opts.textRoutes) {
      // vLLM answers an empty 200 once the engine serves; while a model loads, llama.cpp's 503 body.
      scope.get('/health', { schema: { summary: 'Health (vLLM)', tags: [TAG] } }, async (_request, reply) => {
        if (generators.every((served) => served.generator.ready())) return reply.code(200).send();
        return reply.code(503).type('application/json').send(JSON.stringify({ error: { code: 503, message: 'Loading model', type: 'unavailable_error' } }));
      });
      registerModelRoutes(
        scope,
        {
          text: () => [],
          pickText: (name) => {
            throw Object.assign(createError('SF_ERR_GENERATION_MODEL_UNKNOWN', name), { param: 'model' });
          },
          generators,
        },
        TAG,
      );
    }
  });
}
