import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createError } from '../errors/index.js';
import { inferenceTarget } from '../inference/decorated-model.js';
import { canStream } from '../inference/decoupled-model.js';
import type { InferenceModel, InferRequest, InferResponse, ModelRepository } from '../inference/inference-model.js';
import { disconnectSignal } from '../server/disconnect-signal.js';
import { stringifyJson } from '../tensor/index.js';
import { readRequestBody } from '../server/body-compression.js';
import { decodeGenerateRequest, encodeGenerateResponse } from './generate-json.js';
import { MODEL_PATHS, type ModelParams } from './kserve-model-routes.js';
import { routeDoc } from './kserve-openapi.js';
import { logFailure } from '../server/error-handler.js';
import { requestTrace } from '../tracing/request-tracing.js';
import type { TraceSettings } from '../tracing/trace-settings.js';
import { protocolAnswerOptions, toProtocolError, type ProtocolErrorOptions } from './protocol-errors.js';

export interface GenerateRouteOptions extends ProtocolErrorOptions {
  readonly traceSettings?: TraceSettings;
  readonly repository: ModelRepository;
}

const GENERATE_REQUEST_SCHEMA = {
  type: 'object',
  description: 'Fields named after model inputs are tensors (a scalar, or a nested array); `parameters` and any other field are parameters.',
  properties: { id: { type: 'string' }, parameters: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } } },
  additionalProperties: true,
} as const;

const GENERATE_RESPONSE_SCHEMA = {
  type: 'object',
  description: 'One field per output: its single element, or its elements as a flat array.',
  properties: { id: { type: 'string' }, model_name: { type: 'string' }, model_version: { type: 'string' } },
  additionalProperties: true,
} as const;

/**
 * Triton's generate extension (extension_generate.md): `POST /v2/models/{m}[/versions/{v}]/generate`
 * answers one JSON response; `/generate_stream` answers every response of the request as a
 * Server-Sent Event, which is how decoupled models (0..N responses) are served over HTTP. A request
 * that fails before its first response gets an ordinary JSON error with its status; a failure after
 * it ends the stream with `event: error` and `data: {"error": ..., "code": ...}`.
 */
export function registerGenerateRoutes(scope: FastifyInstance, opts: GenerateRouteOptions): void {
  const description = 'Errors: 404 unknown model or version, 400 invalid request (or a decoupled model that did not send exactly one response), 503 model not ready or overloaded.';
  const generate = routeDoc('Generate one response', { description, body: GENERATE_REQUEST_SCHEMA, response: GENERATE_RESPONSE_SCHEMA });
  const stream = routeDoc('Generate a stream of responses (Server-Sent Events)', {
    description: `Each response is one \`data: {json}\` event, shaped as the generate response. ${description}`,
    body: GENERATE_REQUEST_SCHEMA,
    response: { type: 'string', description: 'text/event-stream' },
  });
  for (const path of MODEL_PATHS) {
    scope.post<{ Params: ModelParams }>(`${path}/generate`, { schema: generate }, (request, reply) => generateOne(request, reply, opts));
    scope.post<{ Params: ModelParams }>(`${path}/generate_stream`, { schema: stream }, (request, reply) => generateStream(request, reply, opts));
  }
}

async function generateOne(request: FastifyRequest<{ Params: ModelParams }>, reply: FastifyReply, opts: GenerateRouteOptions): Promise<FastifyReply> {
  const { model, inferRequest } = await readRequest(request, opts);
  const disconnect = disconnectSignal(reply);
  let response: InferResponse;
  try {
    response = await model.infer({ ...inferRequest, signal: disconnect.signal });
  } finally {
    disconnect.release();
  }
  return reply.type('application/json').send(Buffer.from(stringifyJson(encodeGenerateResponse(response, inferRequest.id)), 'utf8'));
}

async function generateStream(request: FastifyRequest<{ Params: ModelParams }>, reply: FastifyReply, opts: GenerateRouteOptions): Promise<FastifyReply> {
  const { model, inferRequest } = await readRequest(request, opts);
  // The abort reaches the model while the request waits for an instance and, for a decoupled
  // model, stops its stream (the generator's return() runs in the instance); so it is never
  // released, as the stream runs for as long as the response is being written.
  const { signal } = disconnectSignal(reply);
  const responses: Iterable<InferResponse> | AsyncIterable<InferResponse> = canStream(model)
    ? await model.inferStream({ ...inferRequest, signal })
    : [await model.infer({ ...inferRequest, signal })];
  reply.code(200).header('cache-control', 'no-cache').type('text/event-stream; charset=utf-8');
  return reply.send(Readable.from(sseEvents(responses, inferRequest.id, request, opts), { objectMode: false }));
}

/**
 * One `data:` event per response. Written here rather than with the server's stream writer because
 * outputs may hold INT64 values, which only stringifyJson writes exactly.
 */
async function* sseEvents(
  responses: Iterable<InferResponse> | AsyncIterable<InferResponse>,
  inferRequestId: string | undefined,
  request: FastifyRequest,
  opts: ProtocolErrorOptions,
): AsyncGenerator<string> {
  try {
    for await (const response of responses) yield `data: ${stringifyJson(encodeGenerateResponse(response, inferRequestId))}\n\n`;
  } catch (err) {
    const answer = toProtocolError(err, protocolAnswerOptions(request, opts));
    logFailure(request, err, answer);
    yield `event: error\ndata: ${JSON.stringify(answer.body)}\n\n`;
  }
}

async function readRequest(request: FastifyRequest<{ Params: ModelParams }>, opts: GenerateRouteOptions): Promise<{ model: InferenceModel; inferRequest: InferRequest }> {
  const model = inferenceTarget(opts.repository, request.params.model, request.params.version);
  if (!model.ready()) throw createError('SF_ERR_MODEL_NOT_READY', model.info.name, model.info.version);
  const body = await readRequestBody(request, opts.bodyLimit);
  const trace = opts.traceSettings?.admit(model.info.name, requestTrace(request));
  const inferRequest = decodeGenerateRequest(body, model.info);
  return { model, inferRequest: trace ? { ...inferRequest, trace } : inferRequest };
}
