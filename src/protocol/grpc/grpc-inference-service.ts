import type { sendUnaryData, ServerDuplexStream, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import { createError } from '../../errors/index.js';
import type { InferenceModel, ModelRepository } from '../../inference/inference-model.js';
import { buildInferRequest, checkOutputName, splitReservedParameters } from '../infer-request-decoder.js';
import { selectOutputs } from '../infer-response-encoder.js';
import { modelMetadata, serverReady } from '../model-metadata.js';
import { toGrpcError } from './grpc-errors.js';
import {
  decodeGrpcInputs,
  encodeGrpcOutputs,
  fromGrpcParameters,
  toGrpcParameters,
  type GrpcInferParameter,
  type GrpcInputTensor,
} from './grpc-tensor-codec.js';

export interface GrpcServiceOptions {
  readonly repository: ModelRepository;
  readonly serverName: string;
  readonly serverVersion: string;
  readonly extensions: readonly string[];
  readonly ready: () => boolean;
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

/** The handlers of `inference.GRPCInferenceService` over the same ModelRepository as the HTTP routes. */
export function grpcInferenceService(opts: GrpcServiceOptions): UntypedServiceImplementation {
  const { repository } = opts;
  const unary = <Req, Res>(answer: (request: Req, signal: AbortSignal) => Res | Promise<Res>) =>
    (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>): void => {
      const abort = new AbortController();
      call.once('cancelled', () => abort.abort());
      Promise.resolve()
        .then(() => answer(call.request, abort.signal))
        .then((response) => callback(null, response), (err: unknown) => callback(toGrpcError(err)));
    };

  return {
    ServerLive: unary(() => ({ live: true })),
    ServerReady: unary(() => ({ ready: serverReady(opts.ready, repository) })),
    ServerMetadata: unary(() => ({ name: opts.serverName, version: opts.serverVersion, extensions: [...opts.extensions] })),
    ModelReady: unary((request: { name?: string; version?: string }) => ({ ready: lookup(repository, request.name, request.version).ready() })),
    ModelMetadata: unary((request: { name?: string; version?: string }) => modelMetadata(repository, request.name ?? '', request.version || undefined)),
    ModelInfer: unary((request: ModelInferRequestMessage, signal) => {
      const model = lookup(repository, request.model_name, request.model_version);
      if (model.info.decoupled) throw createError('SF_ERR_UNSUPPORTED', "ModelInfer RPC doesn't support models with decoupled transaction policy");
      return infer(model, request, signal);
    }),
    ModelStreamInfer: (call: ServerDuplexStream<ModelInferRequestMessage, Record<string, unknown>>) => streamInfer(repository, call),
  };
}

/** Empty name or version fields mean "not given" in proto3. */
function lookup(repository: ModelRepository, name: string | undefined, version: string | undefined): InferenceModel {
  return repository.get(name ?? '', version || undefined);
}

async function infer(model: InferenceModel, message: ModelInferRequestMessage, signal: AbortSignal): Promise<ModelInferResponseMessage> {
  if (!model.ready()) throw createError('SF_ERR_MODEL_NOT_READY', model.info.name, model.info.version);
  const { info } = model;
  const reserved = splitReservedParameters(fromGrpcParameters(message.parameters));
  const inputs = decodeGrpcInputs(message.inputs ?? [], message.raw_input_contents ?? [], info.name);
  const requested = message.outputs?.length
    ? message.outputs.map((o) => {
        const name = o.name ?? '';
        checkOutputName(name, info);
        const parameters = fromGrpcParameters(o.parameters);
        return Object.keys(parameters).length === 0 ? { name } : { name, parameters };
      })
    : undefined;
  const request = buildInferRequest(message.id, inputs, requested, reserved);
  const response = await model.infer({ ...request, signal });
  const id = response.id ?? request.id;
  return {
    model_name: response.modelName,
    model_version: response.modelVersion,
    ...(id ? { id } : {}),
    parameters: toGrpcParameters(response.parameters),
    ...encodeGrpcOutputs(selectOutputs(response, requested?.map((r) => r.name))),
  };
}

/**
 * Triton's ModelStreamInfer for models that answer once per request: requests run concurrently,
 * each answer (or its error, in `error_message`) is written as it completes, and the stream ends
 * once the client has finished sending and every answer is out. Streaming several answers per
 * request (decoupled models) needs more than InferenceModel.infer gives, so such models are refused.
 */
function streamInfer(repository: ModelRepository, call: ServerDuplexStream<ModelInferRequestMessage, Record<string, unknown>>): void {
  const abort = new AbortController();
  let pending = 0;
  let ended = false;
  const finish = (): void => {
    if (ended && pending === 0) call.end();
  };
  call.once('cancelled', () => abort.abort());
  call.on('data', (message: ModelInferRequestMessage) => {
    pending += 1;
    Promise.resolve()
      .then(() => {
        const model = lookup(repository, message.model_name, message.model_version);
        if (model.info.decoupled) {
          throw createError('SF_ERR_UNSUPPORTED', `Model '${model.info.name}' is decoupled; serve-fn answers ModelStreamInfer once per request, so it cannot stream this model's responses`);
        }
        return infer(model, message, abort.signal);
      })
      .then(
        (response) => call.write({ infer_response: response }),
        (err: unknown) => call.write({ error_message: toGrpcError(err).details }),
      )
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
