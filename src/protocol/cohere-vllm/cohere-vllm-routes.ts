import type { FastifyInstance, FastifySchema } from 'fastify';
import { disconnectSignal } from '../../server/disconnect-signal.js';
import { sendJsonInSlices } from '../../server/sliced-json.js';
import { requestTrace } from '../../tracing/request-tracing.js';
import { setTextAnswerHeaders, textPayloadLimit, type TextRoutesOptions } from '../text-routes.js';
import { errorResponses, installOpenAiErrorHandling } from '../openai/openai-errors.js';
import { optionalString, requestBody } from '../openai/openai-fields.js';
import { cohereEmbedResponse, promptName, readCohereEmbedRequest } from './cohere-embed.js';
import { readRerankRequest, rerankResponse } from './rerank-api.js';
import { classifyResponse, rawScores, readClassifyInputs, readScorePairs, scorePairs, scoreResponse } from './vllm-scoring.js';

const RERANK_TAG = 'Cohere, Jina and vLLM rerank, embed, score and classify';

const documents = { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }] } };
const texts = { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] };

const RERANK_BODY = {
  type: 'object',
  properties: { model: { type: 'string' }, query: { type: 'string' }, documents, top_n: { type: 'integer', minimum: 0 }, return_documents: { type: 'boolean', default: true } },
  required: ['query', 'documents'],
  example: { model: 'my-reranker', query: 'What is Deep Learning?', documents: ['Deep Learning is ...', 'Cheese is ...'], top_n: 1 },
};

const SCORE_BODY = {
  type: 'object',
  description: 'Give the two sides as queries/documents, queries/items, data_1/data_2 or text_1/text_2: one first text against every second text, or two lists of one length zipped.',
  properties: { model: { type: 'string' }, queries: texts, documents: texts, items: texts, data_1: texts, data_2: texts, text_1: texts, text_2: texts, use_activation: { type: 'boolean', default: true } },
  example: { queries: 'What is Deep Learning?', documents: ['Deep Learning is ...', 'Cheese is ...'] },
};

const COHERE_EMBED_BODY = {
  type: 'object',
  properties: {
    model: { type: 'string' },
    texts: { type: 'array', items: { type: 'string' } },
    input_type: { type: 'string', description: "A prompt name of the model's (config_sentence_transformers.json), e.g. search_query" },
    embedding_types: { type: 'array', items: { type: 'string', enum: ['float', 'binary', 'ubinary', 'base64'] }, default: ['float'] },
    output_dimension: { type: 'integer', minimum: 1 },
    truncate: { type: 'string', enum: ['END', 'START', 'NONE'], default: 'END' },
  },
  required: ['texts'],
  example: { model: 'my-embedder', texts: ['What is Deep Learning?'], input_type: 'search_query', embedding_types: ['float'] },
};

const CLASSIFY_BODY = {
  type: 'object',
  properties: { model: { type: 'string' }, input: texts, use_activation: { type: 'boolean', default: true } },
  required: ['input'],
  example: { input: ['I love this!', 'This is awful.'] },
};

function doc(summary: string, body: object): FastifySchema {
  return { summary, tags: [RERANK_TAG], body, response: { 200: { description: 'Successful Response', type: 'object' }, ...errorResponses('vllm') } };
}

/**
 * POST /v1/rerank and /v2/rerank (Cohere v1 and v2, Jina, vLLM), /v2/embed (Cohere v2, as vLLM
 * serves it), /score and /v1/score, /classify and /v1/classify (vLLM), over the served text models. TEI's own /rerank is served with the TEI routes.
 * Errors use vLLM's ErrorResponse, the server these routes mirror.
 */
export async function cohereVllmRoutes(app: FastifyInstance, opts: TextRoutesOptions): Promise<void> {
  const { models } = opts;
  app.setValidatorCompiler(() => () => true);
  // Embedding answers run to megabytes of JSON: written in slices, so the HTTP thread stays free.
  sendJsonInSlices(app);
  const bodyLimit = textPayloadLimit(opts);
  installOpenAiErrorHandling(app, { flavour: 'vllm', exposeErrors: opts.exposeErrors ?? false, bodyLimit });

  for (const version of ['1', '2'] as const) {
    app.post(`/v${version}/rerank`, { bodyLimit, schema: doc(`Rerank documents (Cohere v${version}, Jina, vLLM)`, RERANK_BODY) }, async (request, reply) => {
      const rerank = readRerankRequest(requestBody(request.body));
      const model = models.pick('rerank', rerank.model);
      const answer = await model.rerank(rerank.query, rerank.texts, { signal: disconnectSignal(reply), trace: requestTrace(reply.request) });
      setTextAnswerHeaders(reply, answer, model.info.computeType);
      return rerankResponse(rerank, answer, model.info.name, version);
    });
  }
  app.post('/v2/embed', { bodyLimit, schema: doc('Embed texts (Cohere v2, as vLLM serves it)', COHERE_EMBED_BODY) }, async (request, reply) => {
    const embed = readCohereEmbedRequest(requestBody(request.body));
    const model = models.pick('embed', embed.model);
    const answer = await model.embed(embed.texts, { ...embed.options, signal: disconnectSignal(reply), trace: requestTrace(reply.request), promptName: promptName(model, embed.inputType) });
    setTextAnswerHeaders(reply, answer, model.info.computeType);
    return cohereEmbedResponse(embed, answer);
  });
  for (const path of ['/score', '/v1/score']) {
    app.post(path, { bodyLimit, schema: doc('Score text pairs (vLLM)', SCORE_BODY) }, async (request, reply) => {
      const body = requestBody(request.body);
      const pairs = readScorePairs(body);
      const model = models.pick('rerank', optionalString(body, 'model'));
      const { scores, promptTokens } = await scorePairs(model, pairs, rawScores(body), { signal: disconnectSignal(reply), trace: requestTrace(reply.request) });
      return scoreResponse(scores, promptTokens, model.info.name);
    });
  }
  for (const path of ['/classify', '/v1/classify']) {
    app.post(path, { bodyLimit, schema: doc('Classify texts (vLLM)', CLASSIFY_BODY) }, async (request, reply) => {
      const body = requestBody(request.body);
      const inputs = readClassifyInputs(body);
      const model = models.pick('classify', optionalString(body, 'model'));
      const answer = await model.predict(inputs, { rawScores: rawScores(body), signal: disconnectSignal(reply), trace: requestTrace(reply.request) });
      setTextAnswerHeaders(reply, answer, model.info.computeType);
      return classifyResponse(answer, model.info.labels, model.info.name);
    });
  }
}
