import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createError } from '../errors/index.js';
import { acceptsInferRequests, inferenceTarget } from '../inference/decorated-model.js';
import type { InferenceModel, InferRequest, InferResponse, ModelRepository } from '../inference/inference-model.js';
import { disconnectSignal } from '../server/disconnect-signal.js';
import { INFERENCE_HEADER_CONTENT_LENGTH } from '../tensor/index.js';
import { compressBody, negotiateResponseCoding, readRequestBody } from '../server/body-compression.js';
import { decodeInferRequest } from './infer-request-decoder.js';
import { encodeInferResponse } from './infer-response-encoder.js';
import { MODEL_PATHS, type ModelParams } from './kserve-model-routes.js';
import { inferExamples, INFER_REQUEST_SCHEMA, INFER_RESPONSE_SCHEMA, routeDoc } from './kserve-openapi.js';
import type { SystemSharedMemoryRegistry } from './system-shared-memory/registry.js';
import { requestTrace } from '../tracing/request-tracing.js';
import type { TraceSettings } from '../tracing/trace-settings.js';

export interface InferRouteOptions {
  readonly repository: ModelRepository;
  readonly bodyLimit: number;
  readonly sharedMemory: SystemSharedMemoryRegistry;
  readonly traceSettings: TraceSettings;
}

/** `POST /v2/models/{m}[/versions/{v}]/infer`. The body arrives as a Buffer (the /v2 scope's content-type parser). */
export function registerInferRoutes(scope: FastifyInstance, opts: InferRouteOptions): void {
  // A getter, so the examples are those of the models served when the OpenAPI document is first
  // built (@fastify/swagger builds it once, on the first request for it), not when routes register.
  const body = Object.defineProperty({ ...INFER_REQUEST_SCHEMA }, 'x-examples', { enumerable: true, get: () => inferExamples(opts.repository.models().filter(acceptsInferRequests)) });
  const schema = routeDoc('Run an inference', {
    description: 'Errors: 404 unknown model or version, 400 invalid request, 413 body too large, 501 unsupported, 503 model not ready or overloaded.',
    body,
    consumes: ['application/json', 'application/octet-stream'],
    response: INFER_RESPONSE_SCHEMA,
  });
  for (const path of MODEL_PATHS) {
    scope.post<{ Params: ModelParams }>(`${path}/infer`, { schema }, (request, reply) => infer(request, reply, opts));
  }
}

async function infer(request: FastifyRequest<{ Params: ModelParams }>, reply: FastifyReply, opts: InferRouteOptions): Promise<FastifyReply> {
  const model = inferenceTarget(opts.repository, request.params.model, request.params.version);
  if (model.info.decoupled) throw createError('SF_ERR_UNSUPPORTED', "HTTP end point doesn't support models with decoupled transaction policy");
  if (!model.ready()) throw createError('SF_ERR_MODEL_NOT_READY', model.info.name, model.info.version);
  const body = await readRequestBody(request, opts.bodyLimit);
  const decoded = await decodeInferRequest(body, headerValue(request, INFERENCE_HEADER_CONTENT_LENGTH.toLowerCase()), model.info, opts.sharedMemory);
  const trace = opts.traceSettings.admit(model.info.name, requestTrace(request));
  const response = await inferWhileConnected(model, trace ? { ...decoded.request, trace } : decoded.request, reply);
  const encoded = await encodeInferResponse(response, decoded, opts.sharedMemory, opts.bodyLimit);
  if (encoded.headerLength === undefined) {
    reply.type('application/json');
  } else {
    reply.type('application/octet-stream').header(INFERENCE_HEADER_CONTENT_LENGTH, encoded.headerLength);
  }
  const coding = negotiateResponseCoding(headerValue(request, 'accept-encoding'));
  if (coding === undefined) return reply.send(encoded.body);
  return reply.header('Content-Encoding', coding).send(await compressBody(encoded.body, coding));
}

/** Cancels the request in the model's queue when the client goes away before it runs. */
async function inferWhileConnected(model: InferenceModel, request: InferRequest, reply: FastifyReply): Promise<InferResponse> {
  const disconnect = disconnectSignal(reply);
  try {
    return await model.infer({ ...request, signal: disconnect.signal });
  } finally {
    disconnect.release();
  }
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
