import type { FastifyInstance, FastifySchema } from 'fastify';
import { disconnectSignal } from '../../server/disconnect-signal.js';
import { sendJsonInSlices } from '../../server/sliced-json.js';
import { requestTrace } from '../../tracing/request-tracing.js';
import type { TextEngine } from '../../text/text-engine.js';
import { setTextAnswerHeaders, textPayloadLimit, type TextRoutesOptions } from '../text-routes.js';
import { embeddingsResponse, readEmbeddingsRequest } from './openai-embeddings.js';
import { errorResponses, installOpenAiErrorHandling } from './openai-errors.js';
import { requestBody } from './openai-fields.js';
import { registerModelRoutes } from './openai-models.js';
import type { ServedGenerator } from '../../generation/text-generator.js';

const OPENAI_TAG = 'OpenAI-compatible embeddings';

const EMBEDDINGS_BODY = {
  type: 'object',
  properties: {
    input: {
      description: 'A text, an array of texts, an array of token ids, or an array of token-id arrays',
      anyOf: [
        { type: 'string' },
        { type: 'array', items: { type: 'string' } },
        { type: 'array', items: { type: 'integer' } },
        { type: 'array', items: { type: 'array', items: { type: 'integer' } } },
      ],
    },
    model: { type: 'string' },
    encoding_format: { type: 'string', enum: ['float', 'base64'], default: 'float' },
    dimensions: { type: 'integer', minimum: 1, description: 'Keep the first N values (Matryoshka) and re-normalise' },
    user: { type: 'string' },
  },
  required: ['input'],
  example: { input: 'What is Deep Learning?', model: 'my-embedder' },
};

const EMBEDDINGS_RESPONSE = {
  type: 'object',
  properties: {
    object: { type: 'string' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: { object: { type: 'string' }, embedding: { anyOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string' }] }, index: { type: 'integer' } },
      },
    },
    model: { type: 'string' },
    usage: { type: 'object', properties: { prompt_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } } },
  },
};

function doc(summary: string, parts: { body?: object; response: object }): FastifySchema {
  return { summary, tags: [OPENAI_TAG], ...(parts.body ? { body: parts.body } : {}), response: { 200: { description: 'Successful Response', ...parts.response }, ...errorResponses('openai') } };
}

/**
 * The OpenAI embeddings API (platform.openai.com/docs/api-reference/embeddings and /models) over the
 * served text models: POST /v1/embeddings (and /embeddings, which TEI also serves for clients whose
 * base URL has no /v1), GET /v1/models and /v1/models/{model} (listing the generators too, when
 * the server has both kinds).
 */
export async function openAiRoutes(app: FastifyInstance, opts: TextRoutesOptions & { readonly generators?: readonly ServedGenerator[] }): Promise<void> {
  const { models } = opts;
  // The schemas document; bodies are read by hand so errors keep OpenAI's shape, and answers are
  // written as they are built (a response schema would drop fields it does not list).
  app.setValidatorCompiler(() => () => true);
  // Embedding answers run to megabytes of JSON: written in slices, so the HTTP thread stays free.
  sendJsonInSlices(app);
  const bodyLimit = textPayloadLimit(opts);
  installOpenAiErrorHandling(app, { flavour: 'openai', exposeErrors: opts.exposeErrors ?? false, bodyLimit });

  const embeddingsSchema = doc('Create embeddings (OpenAI)', { body: EMBEDDINGS_BODY, response: EMBEDDINGS_RESPONSE });
  for (const path of ['/v1/embeddings', '/embeddings']) {
    app.post(path, { schema: embeddingsSchema, bodyLimit }, async (request, reply) => {
      const body = readEmbeddingsRequest(requestBody(request.body));
      const model = models.pick('embed', body.model);
      const answer = await model.embed(body.inputs, { dimensions: body.dimensions, signal: disconnectSignal(reply), trace: requestTrace(reply.request) });
      // TEI puts its x-compute-* headers on its OpenAI route too.
      setTextAnswerHeaders(reply, answer, model.info.computeType);
      return embeddingsResponse(answer, model.info.name, body.encodingFormat);
    });
  }

  registerModelRoutes(app, { text: () => models.all(), pickText: (name) => models.pick('any', name), generators: opts.generators ?? [] }, OPENAI_TAG);
}
