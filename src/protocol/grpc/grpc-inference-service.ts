import { once } from 'node:events';
import type { Metadata, sendUnaryData, ServerDuplexStream, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { RequestTrace, RequestTracing } from '../../tracing/request-tracing.js';
import { TraceSettings } from '../../tracing/trace-settings.js';
import { createError } from '../../errors/index.js';
import { inferenceTarget } from '../../inference/decorated-model.js';
import { canStream, type StreamedInferResponse } from '../../inference/decoupled-model.js';
import type { InferenceModel, InferRequest, InferResponse, ModelRepository } from '../../inference/inference-model.js';
import { checkOutputName } from '../../inference/request-validation.js';
import type { InferenceRecorder } from '../../metrics/inference-recorder.js';
import { buildInferRequest, splitReservedParameters } from '../infer-request-decoder.js';
import { selectOutputs } from '../infer-response-encoder.js';
import { loadModel, readLoadParameters, repositoryIndex, unloadModel } from '../model-control.js';
import { modelConfig, modelMetadata, modelReady, modelStatistics, serverMetadata, serverReady, type ServerIdentity } from '../model-metadata.js';
import { takeSharedMemoryParameters, type SharedMemoryLocation } from '../system-shared-memory/tensors.js';
import type { SystemSharedMemoryRegistry } from '../system-shared-memory/registry.js';
import { toGrpcError, type GrpcErrorAnswer } from './grpc-errors.js';
import { grpcSharedMemoryAnswers } from './grpc-shared-memory.js';
import {
  decodeGrpcInputs,
  encodeGrpcOutputs,
  fromGrpcParameters,
  toGrpcParameters,
  type GrpcInferParameter,
  type GrpcInputTensor,
} from './grpc-tensor-codec.js';

export interface GrpcServiceOptions extends ServerIdentity {
  /** The statistics HTTP's `/stats` routes answer. */
  readonly recorder: InferenceRecorder;
  /** The system shared-memory regions, the same as HTTP's. */
  readonly sharedMemory: SystemSharedMemoryRegistry;
  /** Whether a server fault's details carry its message (`serve-fn dev`), as on HTTP; false by default. */
  readonly exposeErrors?: boolean;
  /** Where a server fault is logged whole (stack and `cause`); the server's pino logger. */
  readonly logger?: GrpcFaultLogger;
  /** OpenTelemetry tracing, when on: the call's span (grpc-tracing.ts) is the parent of its model's spans. */
  readonly tracing?: RequestTracing;
  /** Triton's trace settings, the same as HTTP's; off (level OFF) by default. */
  readonly traceSettings?: TraceSettings;
}

/** The part of a pino (fastify) logger a failed call is logged with. */
export interface GrpcFaultLogger {
  error(details: object, message: string): void;
}

/** A ModelRepositoryParameter as proto-loader hands it over (`oneofs: true`, bytes as Buffer). */
interface RepositoryParameter {
  readonly parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'bytes_param';
  readonly bool_param?: boolean;
  readonly int64_param?: string;
  readonly string_param?: string;
  readonly bytes_param?: Uint8Array;
}

interface RepositoryRequestMessage {
  readonly repository_name?: string;
  readonly model_name?: string;
  readonly ready?: boolean;
  readonly parameters?: Readonly<Record<string, RepositoryParameter>>;
}

interface ModelInferRequestMessage {
  readonly model_name?: string;
  readonly model_version?: string;
  readonly id?: string;
  readonly parameters?: Readonly<Record<string, GrpcInferParameter>>;
  readonly inputs?: readonly GrpcInputTensor[];
  readonly outputs?: readonly { name?: string; parameters?: Readonly<Record<string, GrpcInferParameter>> }[];
  readonly raw_input_contents?: readonly Uint8Array[];
}

type ModelInferResponseMessage = Record<string, unknown>;

/** The response parameter that tells a streaming client a request is complete (Triton's user_guide/decoupled_models.md). */
const FINAL = 'triton_final_response';

/**
 * The handlers of `inference.GRPCInferenceService` over the same repository, statistics and server
 * identity as the HTTP routes, and the shared-memory and trace RPCs over HTTP's regions and trace
 * settings. The log RPC has no handler, so it answers UNIMPLEMENTED, and its extension is not in ServerMetadata.
 */
export function grpcInferenceService(opts: GrpcServiceOptions): UntypedServiceImplementation {
  const { repository, recorder, sharedMemory } = opts;
  const failed = grpcFailure(opts);
  const traceSettings = opts.traceSettings ?? new TraceSettings(false);
  const traceOf = callTrace(opts.tracing, traceSettings);
  const unary = <Req, Res>(answer: (request: Req, signal: AbortSignal, metadata: Metadata) => Res | Promise<Res>) =>
    (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
      const abort = new AbortController();
      const cancel = (): void => abort.abort();
      // grpc-js reports 'cancelled' when any call's stream closes, answered or not: the listener goes
      // once the answer is in, so an answered request's signal is not aborted (each abort also builds
      // a DOMException with its stack, a measured cost per call).
      call.once('cancelled', cancel);
      const answered = (): void => void call.off('cancelled', cancel);
      Promise.resolve()
        .then(() => answer(call.request, abort.signal, call.metadata))
        .finally(answered)
        .then(
          (response) => callback(null, response),
          (err: unknown) => {
            const { code, details } = failed(err, call.getPath());
            callback({ code, details });
          },
        );
    };

  return {
    ServerLive: unary(() => ({ live: true })),
    ServerReady: unary(() => ({ ready: serverReady(opts.ready, repository) })),
    ServerMetadata: unary(() => serverMetadata(opts)),
    ModelReady: unary((request: { name?: string; version?: string }) => ({ ready: modelReady(repository, request.name ?? '', request.version || undefined) })),
    ModelMetadata: unary((request: { name?: string; version?: string }) => modelMetadata(repository, request.name ?? '', request.version || undefined)),
    ModelInfer: unary((request: ModelInferRequestMessage, signal, metadata) => {
      const model = inferenceTarget(repository, request.model_name ?? '', request.model_version || undefined);
      if (model.info.decoupled) throw createError('SF_ERR_UNSUPPORTED', "ModelInfer RPC doesn't support models with decoupled transaction policy");
      return infer(model, request, signal, sharedMemory, {}, traceOf(metadata, model));
    }),
    ModelStreamInfer: (call: ServerDuplexStream<ModelInferRequestMessage, Record<string, unknown>>) => streamInfer(repository, sharedMemory, call, failed, (model) => traceOf(call.metadata, model)),
    // Triton's trace extension (docs/protocol/extension_trace.md): no settings reads them, a setting
    // with no value puts it back to the global (a model's) or default value.
    TraceSetting: unary((request: { settings?: Record<string, { value?: string[] }>; model_name?: string }) => {
      const model = request.model_name || undefined;
      if (model !== undefined && repository.models(model).length === 0) repository.get(model);
      const entries = Object.entries(request.settings ?? {});
      const settings = entries.length === 0 ? traceSettings.get(model) : traceSettings.update(model, Object.fromEntries(entries.map(([name, v]) => [name, v.value?.length ? v.value : null])));
      return { settings: Object.fromEntries(Object.entries(settings).map(([name, value]) => [name, { value: Array.isArray(value) ? value : [value] }])) };
    }),
    // proto-loader encodes the config JSON with protobufjs's fromObject: Triton's JSON mapping (enum
    // names, int64 as text or number) is what it reads, as Triton's own JsonStringToMessage.
    ModelConfig: unary((request: { name?: string; version?: string }) => ({ config: modelConfig(repository, request.name ?? '', request.version || undefined) })),
    ModelStatistics: unary((request: { name?: string; version?: string }) => modelStatistics(recorder, repository, request.name || undefined, request.version || undefined)),
    RepositoryIndex: unary(async (request: RepositoryRequestMessage) => {
      checkRepositoryName(request);
      return { models: await repositoryIndex(repository, request.ready === true) };
    }),
    RepositoryModelLoad: unary(async (request: RepositoryRequestMessage) => {
      checkRepositoryName(request);
      const load = readLoadParameters(Object.entries(request.parameters ?? {}), {
        config: (key, p) => (p.parameter_choice === 'string_param' ? p.string_param ?? '' : invalidParameter(key, 'string_param')),
        file: (key, p) => (p.parameter_choice === 'bytes_param' ? new Uint8Array(p.bytes_param ?? []) : invalidParameter(key, 'bytes_param')),
      });
      await loadModel(repository, request.model_name ?? '', load);
      return {};
    }),
    RepositoryModelUnload: unary(async (request: RepositoryRequestMessage) => {
      checkRepositoryName(request);
      const dependents = request.parameters?.unload_dependents;
      if (dependents !== undefined && dependents.parameter_choice !== 'bool_param') {
        throw createError('SF_ERR_BAD_REQUEST', "invalid value type for 'unload_dependents' parameter, expected bool_param.");
      }
      await unloadModel(repository, request.model_name ?? '', dependents?.bool_param === true);
      return {};
    }),
    ...Object.fromEntries(Object.entries(grpcSharedMemoryAnswers(sharedMemory)).map(([rpc, answer]) => [rpc, unary(answer)])),
  };
}

/** Answers a failed call as its gRPC status, and logs a server fault whole, as HTTP's error handler does. */
function grpcFailure(opts: GrpcServiceOptions): (err: unknown, method: string) => GrpcErrorAnswer {
  const exposeErrors = opts.exposeErrors ?? false;
  return (err, method) => {
    const answer = toGrpcError(err, { exposeErrors });
    if (answer.fault) opts.logger?.error({ err, method }, 'gRPC call failed');
    return answer;
  };
}

/** serve-fn serves one repository, so, as Triton, a named one is refused. */
function checkRepositoryName(request: RepositoryRequestMessage): void {
  if (request.repository_name) throw createError('SF_ERR_UNSUPPORTED', "'repository_name' specification is not supported");
}

function invalidParameter(key: string, expected: string): never {
  throw createError('SF_ERR_BAD_REQUEST', `invalid value type for load parameter '${key}', expected ${expected}.`);
}

/** Empty name or version fields mean "not given" in proto3. */
function lookup(repository: ModelRepository, name: string | undefined, version: string | undefined): InferenceModel {
  return repository.get(name ?? '', version || undefined);
}

/** One request, one response; `extra` are response parameters added to the model's. */
async function infer(
  model: InferenceModel,
  message: ModelInferRequestMessage,
  signal: AbortSignal,
  sharedMemory: SystemSharedMemoryRegistry,
  extra: Readonly<Record<string, unknown>> = {},
  trace?: RequestTrace,
): Promise<ModelInferResponseMessage> {
  if (!model.ready()) throw createError('SF_ERR_MODEL_NOT_READY', model.info.name, model.info.version);
  const { request, requested } = await readRequest(model, message, sharedMemory);
  const response = await model.infer({ ...request, signal, ...(trace && { trace }) });
  return responseMessage(response, request.id, requested, sharedMemory, extra);
}

/** A requested output, and the region it goes into when it has shared-memory parameters. */
interface RequestedGrpcOutput {
  readonly name: string;
  readonly sharedMemory?: SharedMemoryLocation;
}

interface DecodedGrpcRequest {
  readonly request: InferRequest;
  readonly requested?: readonly RequestedGrpcOutput[];
  /** Triton's `triton_enable_empty_final_response`: end a decoupled request with an empty final response. */
  readonly emptyFinal: boolean;
}

async function readRequest(model: InferenceModel, message: ModelInferRequestMessage, sharedMemory: SystemSharedMemoryRegistry): Promise<DecodedGrpcRequest> {
  const { info } = model;
  const { triton_enable_empty_final_response: emptyFinal, ...parameters } = fromGrpcParameters(message.parameters);
  if (emptyFinal !== undefined && typeof emptyFinal !== 'boolean') {
    throw createError('SF_ERR_BAD_REQUEST', `Parameter 'triton_enable_empty_final_response' must be a bool_param, got ${JSON.stringify(emptyFinal)}.`);
  }
  const reserved = splitReservedParameters(parameters);
  const readInputs = decodeGrpcInputs(message.inputs ?? [], message.raw_input_contents ?? [], info.name, sharedMemory);
  const requested = message.outputs?.length
    ? message.outputs.map((o) => {
        const name = o.name ?? '';
        checkOutputName(name, info);
        const { location, rest } = takeSharedMemoryParameters(`output '${name}'`, fromGrpcParameters(o.parameters));
        // Checked now, as Triton does, so a wrong region fails the request before the model runs.
        if (location !== undefined) sharedMemory.check(location.region, location.offset, location.byteSize);
        return { output: Object.keys(rest).length === 0 ? { name } : { name, parameters: rest }, sharedMemory: location };
      })
    : undefined;
  const inputs = await readInputs();
  return {
    request: buildInferRequest(message.id, inputs, requested?.map((r) => r.output), reserved),
    requested: requested?.map((r) => (r.sharedMemory ? { name: r.output.name, sharedMemory: r.sharedMemory } : { name: r.output.name })),
    emptyFinal: emptyFinal === true,
  };
}

async function responseMessage(
  response: InferResponse,
  requestId: string | undefined,
  requested: readonly RequestedGrpcOutput[] | undefined,
  sharedMemory: SystemSharedMemoryRegistry,
  extra: Readonly<Record<string, unknown>> = {},
): Promise<ModelInferResponseMessage> {
  const id = response.id ?? requestId;
  const tensors = selectOutputs(response, requested?.map((r) => r.name));
  return {
    model_name: response.modelName,
    model_version: response.modelVersion,
    ...(id ? { id } : {}),
    parameters: toGrpcParameters({ ...response.parameters, ...extra }),
    ...(await encodeGrpcOutputs(tensors, requested && { registry: sharedMemory, locations: requested.map((r) => r.sharedMemory) })),
  };
}

/**
 * Triton's ModelStreamInfer: requests run concurrently and each response (or error, in
 * `error_message`) is written as it comes. A decoupled model's request answers 0..N times; every
 * response carries `triton_final_response` (true on a model's last, and on the one answer of other
 * models), and a request with `triton_enable_empty_final_response` ends with an empty final
 * response unless its last response was final. Responses are pulled only as fast as gRPC sends
 * them; a cancelled call stops every model still streaming. The call ends once the client has
 * finished sending and every request is answered.
 */
function streamInfer(
  repository: ModelRepository,
  sharedMemory: SystemSharedMemoryRegistry,
  call: ServerDuplexStream<ModelInferRequestMessage, Record<string, unknown>>,
  failed: (err: unknown, method: string) => GrpcErrorAnswer,
  traceOf: (model: InferenceModel) => RequestTrace | undefined,
): void {
  const abort = new AbortController();
  let pending = 0;
  let ended = false;
  const finish = (): void => {
    if (ended && pending === 0) call.end();
  };
  const write = async (message: Record<string, unknown>): Promise<void> => {
    if (!call.write(message)) await once(call, 'drain', { signal: abort.signal });
  };
  call.once('cancelled', () => abort.abort());
  call.on('data', (message: ModelInferRequestMessage) => {
    pending += 1;
    Promise.resolve()
      .then(() => answerOnStream(repository, sharedMemory, message, abort.signal, write, traceOf))
      .catch((err: unknown) => {
        if (!abort.signal.aborted) call.write({ error_message: failed(err, call.getPath()).details });
      })
      .finally(() => {
        pending -= 1;
        finish();
      });
  });
  call.once('end', () => {
    ended = true;
    finish();
  });
}

async function answerOnStream(
  repository: ModelRepository,
  sharedMemory: SystemSharedMemoryRegistry,
  message: ModelInferRequestMessage,
  signal: AbortSignal,
  write: (message: Record<string, unknown>) => Promise<void>,
  traceOf: (model: InferenceModel) => RequestTrace | undefined,
): Promise<void> {
  const model = inferenceTarget(repository, message.model_name ?? '', message.model_version || undefined);
  const trace = traceOf(model);
  // canStream only looks at the model's type, so checking it first keeps the order of the checks that can fail.
  if (!canStream(model)) {
    await write({ infer_response: await infer(model, message, signal, sharedMemory, { [FINAL]: true }, trace) });
    return;
  }
  if (!model.ready()) throw createError('SF_ERR_MODEL_NOT_READY', model.info.name, model.info.version);
  const { request, requested, emptyFinal } = await readRequest(model, message, sharedMemory);
  const stream = await model.inferStream({ ...request, signal, ...(trace && { trace }) });
  let last: StreamedInferResponse | undefined;
  try {
    for await (const response of stream) {
      last = response;
      await write({ infer_response: await responseMessage(response, request.id, requested, sharedMemory, { [FINAL]: response.final }) });
    }
  } finally {
    stream.cancel();
  }
  if (emptyFinal && !last?.final) {
    const empty: InferResponse = { modelName: model.info.name, modelVersion: model.info.version, id: request.id, outputs: [] };
    await write({ infer_response: await responseMessage(empty, request.id, [], sharedMemory, { [FINAL]: true }) });
  }
}

/**
 * The trace a call's model spans go under: the call's SERVER span, whose traceparent the tracing
 * interceptor put in the call's metadata (grpc-tracing.ts), when the model's settings admit it.
 */
function callTrace(tracing: RequestTracing | undefined, settings: TraceSettings): (metadata: Metadata, model: InferenceModel) => RequestTrace | undefined {
  if (!tracing) return () => undefined;
  return (metadata, model) => {
    const traceparent = metadata.get('traceparent').find((v): v is string => typeof v === 'string');
    return settings.admit(model.info.name, traceparent === undefined ? undefined : tracing.traceOfParent(traceparent));
  };
}
