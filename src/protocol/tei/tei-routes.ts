import type { FastifyInstance, FastifyReply, FastifySchema } from 'fastify';
import { disconnectSignal } from '../../server/disconnect-signal.js';
import { sendJsonInSlices } from '../../server/sliced-json.js';
import { requestTrace } from '../../tracing/request-tracing.js';
import { createError } from '../../errors/index.js';
import type { TextTask } from '../../text/model-folder.js';
import { parseTextInputs, type TextInput } from '../../text/text-inputs.js';
import type { TextEngine } from '../../text/text-engine.js';
import type { TextModelSet, TextNeed } from '../../text/text-model-set.js';
import { numberList, setTextAnswerHeaders, textPayloadLimit, type TextRoutesOptions } from '../text-routes.js';
import { installTeiErrorHandling } from './tei-errors.js';
import {
  booleanOr,
  decodeIds,
  optionalCount,
  optionalString,
  predictInputs,
  required,
  requiredString,
  similarityInputs,
  similarityParameters,
  stringList,
  teiBody,
  tokenizeInputs,
  truncation,
  type TeiBody,
} from './tei-fields.js';
import { teiInfo } from './tei-info.js';
import { TEI_SCHEMAS } from './tei-openapi.js';

export interface TeiRoutesOptions extends TextRoutesOptions {
  /** What /info answers as `version` (TEI's own router version there): serve-fn's version. */
  readonly serverVersion: string;
  /** Whether the server's other models (its generators, whose vLLM /health this path also is) are ready too; default true. */
  readonly othersReady?: () => boolean;
}

type Handler = (body: TeiBody, model: TextEngine, reply: FastifyReply) => Promise<unknown>;

const embed: Handler = async (body, model, reply) => {
  const inputs = teiInputs(body);
  const answer = await model.embed(inputs, {
    ...truncation(body),
    signal: disconnectSignal(reply), trace: requestTrace(reply.request),
    normalize: booleanOr(body, 'normalize', true),
    dimensions: optionalCount(body, 'dimensions'),
    promptName: optionalString(body, 'prompt_name'),
  });
  setTextAnswerHeaders(reply, answer, model.info.computeType);
  return answer.values.map(numberList);
};

const embedAll: Handler = async (body, model, reply) => {
  const inputs = teiInputs(body);
  const answer = await model.embedAll(inputs, { ...truncation(body), signal: disconnectSignal(reply), trace: requestTrace(reply.request), promptName: optionalString(body, 'prompt_name') });
  setTextAnswerHeaders(reply, answer, model.info.computeType);
  return answer.values.map((tokens) => tokens.map(numberList));
};

const embedSparse: Handler = async (body, model, reply) => {
  const inputs = teiInputs(body);
  const answer = await model.embedSparse(inputs, { ...truncation(body), signal: disconnectSignal(reply), trace: requestTrace(reply.request), promptName: optionalString(body, 'prompt_name') });
  setTextAnswerHeaders(reply, answer, model.info.computeType);
  return answer.values.map((entries) => entries.map(({ index, value }) => ({ index, value })));
};

/** A single text or pair answers one list of labels; a batch answers a list of them (TEI's `PredictResponse`). */
const predict: Handler = async (body, model, reply) => {
  const inputs = predictInputs(required(body, 'inputs'));
  const options = { ...truncation(body), signal: disconnectSignal(reply), trace: requestTrace(reply.request), rawScores: booleanOr(body, 'raw_scores', false) };
  const answer = await model.predict(inputs.batch ? inputs.inputs : [inputs.input], options);
  setTextAnswerHeaders(reply, answer, model.info.computeType);
  const labels = answer.values.map((scored) => scored.map(({ score, label }) => ({ score, label })));
  return inputs.batch ? labels : labels[0];
};

const rerank: Handler = async (body, model, reply) => {
  const query = requiredString(body, 'query');
  const texts = stringList(required(body, 'texts'), 'texts');
  const returnText = booleanOr(body, 'return_text', false);
  const answer = await model.rerank(query, texts, { ...truncation(body), signal: disconnectSignal(reply), trace: requestTrace(reply.request), rawScores: booleanOr(body, 'raw_scores', false) });
  setTextAnswerHeaders(reply, answer, model.info.computeType);
  const ranks = answer.values.map((score, index) => ({ index, ...(returnText ? { text: texts[index] } : {}), score }));
  // TEI sorts ascending (a stable sort) and reverses, so of two equal scores the later text comes first.
  return ranks.sort((a, b) => a.score - b.score).reverse();
};

const similarity: Handler = async (body, model, reply) => {
  const { source, sentences } = similarityInputs(required(body, 'inputs'));
  const parameters = similarityParameters(body);
  const answer = await model.similarity(source, sentences, { ...truncation(parameters), signal: disconnectSignal(reply), trace: requestTrace(reply.request), promptName: optionalString(parameters, 'prompt_name') });
  setTextAnswerHeaders(reply, answer, model.info.computeType);
  return answer.values;
};

/** TEI answers /tokenize and /decode without its timing headers: they run no forward pass. */
const tokenize: Handler = async (body, model) => {
  const inputs = tokenizeInputs(required(body, 'inputs'));
  const tokens = await model.tokenize(inputs, { addSpecialTokens: booleanOr(body, 'add_special_tokens', true), promptName: optionalString(body, 'prompt_name') });
  return tokens.map((row) => row.map(({ id, text, special, start, stop }) => ({ id, text, special, start, stop })));
};

const decode: Handler = async (body, model) => model.decode(decodeIds(required(body, 'ids')), booleanOr(body, 'skip_special_tokens', true));

/** TEI's rule for its POST / and /invocations (router/src/http/server.rs): the route of the model's task. */
const ROOT_HANDLERS: Readonly<Record<TextTask, Handler>> = { classify: predict, rerank, sparse: embedSparse, embed };

function teiInputs(body: TeiBody): TextInput[] {
  // TEI embeds "" as its special tokens alone.
  return parseTextInputs(required(body, 'inputs'), { field: 'inputs', allowEmptyString: false });
}

/** TEI's /predict serves rerankers as well as classifiers: with no classifier served, the one reranker answers it. */
function pick(models: TextModelSet, need: TextNeed, name: string | undefined): TextEngine {
  if (need !== 'classify' || name !== undefined || models.all().some((model) => model.info.task === 'classify')) return models.pick(need, name);
  return models.pick('rerank');
}

/**
 * Hugging Face Text Embeddings Inference's HTTP API (TEI v1.9: router/src/http/server.rs, docs/openapi.json)
 * over the served text models, as an encapsulated plugin: its error handler answers TEI's
 * `{error, error_type}` and leaves the other routes alone.
 */
export async function teiRoutes(app: FastifyInstance, opts: TeiRoutesOptions): Promise<void> {
  const { models } = opts;
  const bodyLimit = textPayloadLimit(opts);
  // Bodies are read by tei-fields.ts; the schemas are the routes' documentation.
  app.setValidatorCompiler(() => () => true);
  // Embedding answers run to megabytes of JSON: written in slices, so the HTTP thread stays free.
  sendJsonInSlices(app);
  installTeiErrorHandling(app, { exposeErrors: opts.exposeErrors ?? false });
  // TEI's bodies are JSON (axum's Json extractor answers anything else 415), where fastify would
  // hand a text/plain body over as a string.
  app.addHook('preValidation', async (request) => {
    const type = request.headers['content-type'];
    if (request.method === 'POST' && !/^application\/json\s*(;|$)/i.test(type ?? '')) throw createError('SF_ERR_UNSUPPORTED_MEDIA_TYPE', type ?? 'none', request.url, 'application/json');
  });

  // TEI serves one model and lets every route reach it, answering 424 where the task does not fit;
  // the set does the same with one model, and with several picks by the request's `model` (a
  // serve-fn extension) or by the route's task.
  const post = (url: string, schema: FastifySchema, task: TextNeed, handler: Handler): void => {
    app.post(url, { schema, bodyLimit }, async (request, reply) => {
      const body = teiBody(request.body);
      return handler(body, pick(models, task, optionalString(body, 'model')), reply);
    });
  };
  post('/embed', TEI_SCHEMAS.embed, 'embed', embed);
  post('/embed_all', TEI_SCHEMAS.embedAll, 'embed', embedAll);
  post('/embed_sparse', TEI_SCHEMAS.embedSparse, 'sparse', embedSparse);
  post('/predict', TEI_SCHEMAS.predict, 'classify', predict);
  post('/rerank', TEI_SCHEMAS.rerank, 'rerank', rerank);
  post('/similarity', TEI_SCHEMAS.similarity, 'embed', similarity);
  post('/tokenize', TEI_SCHEMAS.tokenize, 'any', tokenize);
  post('/decode', TEI_SCHEMAS.decode, 'any', decode);
  for (const url of ['/', '/invocations']) {
    app.post(url, { schema: TEI_SCHEMAS.root, bodyLimit }, async (request, reply) => {
      const body = teiBody(request.body);
      const model = models.pick('any', optionalString(body, 'model'));
      return ROOT_HANDLERS[model.info.task](body, model, reply);
    });
  }

  app.get('/info', { schema: TEI_SCHEMAS.info }, async (request) => {
    const name = optionalString(teiBody(request.query ?? {}), 'model');
    return teiInfo(models.pick('any', name), opts.serverVersion);
  });
  // TEI answers its health check on /health, on GET / and, for SageMaker, on /ping.
  for (const url of ['/health', '/', '/ping']) {
    app.get(url, { schema: TEI_SCHEMAS.health }, async (_request, reply) => {
      if (models.all().every((model) => model.ready()) && (opts.othersReady?.() ?? true)) return reply.code(200).send();
      return reply.code(503).type('application/json').send(JSON.stringify({ error: 'unhealthy', error_type: 'Unhealthy' }));
    });
  }
}
