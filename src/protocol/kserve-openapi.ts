import type { FastifySchema } from 'fastify';
import { createError, type SfErrorCode } from '../errors/index.js';
import type { InferenceModel, InferenceModelInfo } from '../inference/inference-model.js';
import type { ApiGroup } from '../server/restricted-apis.js';
import { DATATYPES, type Datatype } from '../spec/tensor.js';
import { elementCount } from '../tensor/index.js';

/**
 * OpenAPI documentation of the /v2 routes: JSON Schemas of the protocol's messages (KServe v2
 * required_api.md and Triton's protocol extensions) and one example infer request per served model. The schemas only document: the /v2
 * scope reads bodies itself, so fastify neither validates nor serializes with them.
 */

export type Schema = Record<string, unknown>;

export const KSERVE_TAG = 'KServe v2 inference protocol';
export const KSERVE_SHARED_MEMORY_TAG = 'KServe v2 shared memory';

const parameters: Schema = {
  type: 'object',
  additionalProperties: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
};

const shape: Schema = { type: 'array', items: { type: 'integer' } };
const datatype: Schema = { type: 'string', enum: [...DATATYPES] };

const tensorMetadata: Schema = {
  type: 'object',
  properties: { name: { type: 'string' }, datatype, shape: { ...shape, description: '-1 marks a variable dimension' } },
  required: ['name', 'datatype', 'shape'],
};

const tensorData: Schema = {
  type: 'array',
  description: 'Elements in row-major order, flat or nested. INT64/UINT64 are exact integers; BYTES are UTF-8 strings.',
  items: {},
};

export const ERROR_SCHEMA: Schema = {
  type: 'object',
  properties: { error: { type: 'string' } },
  required: ['error'],
};

export const SERVER_METADATA_SCHEMA: Schema = {
  type: 'object',
  properties: { name: { type: 'string' }, version: { type: 'string' }, extensions: { type: 'array', items: { type: 'string' } } },
  required: ['name', 'version', 'extensions'],
};

export const MODEL_METADATA_SCHEMA: Schema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    versions: { type: 'array', items: { type: 'string' } },
    platform: { type: 'string' },
    inputs: { type: 'array', items: tensorMetadata },
    outputs: { type: 'array', items: tensorMetadata },
  },
  required: ['name', 'platform', 'inputs', 'outputs'],
};

/** A tensor with its data, in requests and responses alike. */
const tensor: Schema = {
  type: 'object',
  properties: { name: { type: 'string' }, shape, datatype, parameters, data: tensorData },
  required: ['name', 'shape', 'datatype'],
};

export const INFER_REQUEST_SCHEMA: Schema = {
  type: 'object',
  description: [
    'JSON, or (binary tensor data extension) JSON followed by raw tensor bytes with `Inference-Header-Content-Length` giving the JSON length;',
    'an input with parameter `binary_data_size` takes its bytes from after the JSON. `Inference-Header-Content-Length: 0` sends the body',
    'as the raw bytes of a single-input model. Reserved parameters: `priority`, `timeout` (µs), `binary_data_output`, `sequence_id`,',
    '`sequence_start`, `sequence_end`. Bodies may be gzip or deflate compressed (`Content-Encoding`).',
  ].join(' '),
  properties: {
    id: { type: 'string' },
    parameters,
    inputs: {
      type: 'array',
      items: tensor,
    },
    outputs: {
      type: 'array',
      description: 'Outputs to return (all when absent); parameter `binary_data: true` returns one as bytes after the JSON.',
      items: { type: 'object', properties: { name: { type: 'string' }, parameters }, required: ['name'] },
    },
  },
  required: ['inputs'],
};

export const INFER_RESPONSE_SCHEMA: Schema = {
  type: 'object',
  description: 'With binary outputs the body is `application/octet-stream`: this JSON, then the outputs\' bytes, with `Inference-Header-Content-Length`.',
  properties: {
    model_name: { type: 'string' },
    model_version: { type: 'string' },
    id: { type: 'string' },
    parameters,
    outputs: {
      type: 'array',
      items: tensor,
    },
  },
  required: ['model_name', 'outputs'],
};

const durationStat: Schema = { type: 'object', properties: { count: { type: 'integer' }, ns: { type: 'integer' } } };

export const STATISTICS_SCHEMA: Schema = {
  type: 'object',
  properties: {
    model_stats: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          version: { type: 'string' },
          last_inference: { type: 'integer', description: 'ms since the epoch' },
          inference_count: { type: 'integer' },
          execution_count: { type: 'integer' },
          inference_stats: { type: 'object', additionalProperties: durationStat },
          response_stats: { type: 'object' },
          batch_stats: { type: 'array', items: { type: 'object' } },
          memory_usage: { type: 'array', items: { type: 'object' } },
        },
      },
    },
  },
};

export const REPOSITORY_INDEX_REQUEST_SCHEMA: Schema = {
  type: 'object',
  properties: { ready: { type: 'boolean', description: 'Only models that are ready' } },
};

export const REPOSITORY_INDEX_SCHEMA: Schema = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      version: { type: 'string' },
      state: { type: 'string', enum: ['UNKNOWN', 'READY', 'UNAVAILABLE', 'LOADING', 'UNLOADING'] },
      reason: { type: 'string' },
    },
    required: ['name', 'state'],
  },
};

export const LOAD_REQUEST_SCHEMA: Schema = {
  type: 'object',
  properties: {
    parameters: {
      type: 'object',
      description: '`config`: a ModelConfig JSON string overriding config.pbtxt; `file:<version>/<name>`: base64 file contents.',
      additionalProperties: { type: 'string' },
    },
  },
};

export const UNLOAD_REQUEST_SCHEMA: Schema = {
  type: 'object',
  properties: { parameters: { type: 'object', properties: { unload_dependents: { type: 'boolean' } } } },
};

const emptyBody: Schema = { type: 'null', description: 'Empty body' };

/** A response entry for an error status: what it means on /v2, with a body that answers it there. */
export function errorResponse(description: string, code: SfErrorCode, ...args: string[]): Schema {
  return { description, content: { 'application/json': { schema: ERROR_SCHEMA, example: { error: createError(code, ...args).message } } } };
}

/**
 * The error statuses of the /v2 routes, after Triton's mapping of its error kinds (invalid argument
 * 400, not found 404, internal 500, unavailable 503; Triton's docs/protocol/README.md).
 */
const PROTOCOL_ERRORS: Readonly<Record<number, Schema>> = {
  400: errorResponse(
    'Bad Request: the request does not fit the model (a missing or unexpected input, a wrong datatype or shape, bad sequence controls), its body cannot be read, or (readiness) the model is not ready.',
    'SF_ERR_TENSOR_SHAPE', 'INPUT0', '[1,16]', '[1,4]',
  ),
  404: errorResponse('Not Found: no model of that name, or no such version of it.', 'SF_ERR_MODEL_UNKNOWN', 'my_model'),
  500: errorResponse('Internal Server Error: the model or its backend failed.', 'SF_ERR_BACKEND_RUN_FAILED', 'onnxruntime', 'model.onnx', '<what the backend reported>'),
  503: errorResponse(
    "Service Unavailable: the model is not ready, its queue is full, the request waited past its `timeout`, the server is shutting down, or (load and unload) the repository is not in explicit model control mode.",
    'SF_ERR_MODEL_NOT_READY', 'my_model', '1',
  ),
};

/** The answers of a route in a group restricted by default (docs/security.md, "Restricted APIs"): `errors` and the 403 refusal. */
export function restrictedGroupErrors(group: ApiGroup, errors: Readonly<Record<number, Schema>> = PROTOCOL_ERRORS): Readonly<Record<number, Schema>> {
  const description = `Forbidden: '${group}' answers clients on the server's own host only, or, with --http-restricted-api, requests that carry its header.`;
  return { ...errors, 403: errorResponse(description, 'SF_ERR_API_LOCAL_ONLY', 'API', '--http-restricted-api', group) };
}

export interface RouteDocParts {
  readonly description?: string;
  readonly body?: Schema;
  readonly consumes?: readonly string[];
  /** The 200 answer; absent = an empty body. */
  readonly response?: Schema;
  /** The answers other than 200, when not those of a route that reaches a model. */
  readonly errors?: Readonly<Record<number, Schema>>;
  /** The OpenAPI tag, when not KSERVE_TAG. */
  readonly tag?: string;
}

/** Server health, as Triton's HandleServerHealth: the status alone says it, with no body. */
export const NOT_READY_ANSWER: Readonly<Record<number, Schema>> = {
  400: { type: 'null', description: 'Not ready: a model in the repository is not ready, or the server is shutting down.' },
};

export function routeDoc(summary: string, parts: RouteDocParts = {}): FastifySchema {
  return {
    summary,
    tags: [parts.tag ?? KSERVE_TAG],
    ...(parts.description ? { description: parts.description } : {}),
    ...(parts.body ? { body: parts.body } : {}),
    ...(parts.consumes ? { consumes: [...parts.consumes] } : {}),
    response: { 200: parts.response ?? emptyBody, ...(parts.errors ?? PROTOCOL_ERRORS) },
  } as FastifySchema;
}

/** An infer request body for `info`: batch 1, variable dimensions 1, small counting values that fit every datatype. */
export function exampleInferRequest(info: InferenceModelInfo): Schema {
  return {
    inputs: info.inputs
      .filter((spec) => !spec.optional)
      .map((spec) => {
        const dims = [...(info.maxBatchSize > 0 ? [1] : []), ...spec.shape.map((d) => (d === -1 ? 1 : d))];
        return { name: spec.name, shape: dims, datatype: spec.datatype, data: Array.from({ length: elementCount(dims) }, (_, i) => exampleValue(spec.datatype, i)) };
      }),
    outputs: info.outputs.map((spec) => ({ name: spec.name })),
  };
}

function exampleValue(type: Datatype, i: number): number | boolean | string {
  if (type === 'BOOL') return i % 2 === 1;
  if (type === 'BYTES') return String(i % 8);
  return i % 8;
}

/** One named example per served model version, for the infer route's request body (`x-examples` → OpenAPI `examples`). */
export function inferExamples(models: readonly InferenceModel[]): Record<string, { summary: string; value: Schema }> {
  return Object.fromEntries(
    models.map(({ info }) => [
      `${info.name}_v${info.version}`,
      { summary: `POST /v2/models/${info.name}/versions/${info.version}/infer`, value: exampleInferRequest(info) },
    ]),
  );
}
