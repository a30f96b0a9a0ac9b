import 'reflect-metadata';

export { Model, Endpoint, Batch, Instances, WebSocketEndpoint, Tensors, TextModel, GenerativeModel } from './decorators/index.js';
// Model classes are resolved by serve-fn's own tsyringe; a second copy installed by the user has its
// own container and type records, which serve-fn never sees, so users import these from here.
export { container, inject, injectable, singleton, registry, Lifecycle, type DependencyContainer, type InjectionToken } from 'tsyringe';
// class-transformer keeps @Type and @Transform records in its own module-level storage, which serve-fn's
// validator and OpenAPI document read: a copy the project installs itself is never seen, so nested DTOs
// are declared with the decorators from here.
export { Type, Transform } from 'class-transformer';
export type { ModelOptions, EndpointOptions, InstancesOptions, HttpMethod, StreamFormat, WebSocketEndpointOptions, TensorsOptions, TensorDeclaration, TextModelDeclaration, TextTaskName, GenerativeModelDeclaration } from './metadata/records.js';
export type { DecoderStepHook, DecoderStepRow, DecoderStepResult } from './spec/decoder-step.js';
export type { ModelContext, RequestInfo, SocketContext } from './definition/model-context.js';
export type { ModelDefinition, EndpointDefinition, SocketEndpointDefinition } from './definition/model-definition.js';
export { buildDefinitions } from './definition/definition-builder.js';
export type { BatchPolicy, BatchPolicyInput, QueuePolicy } from './spec/batch-policy.js';
export { IsFile, type UploadedFile, type IsFileOptions } from './validation/uploaded-file.js';
export { ServeFnServer, type ServeOptions, type RepositoryServeOptions } from './serve-fn-server.js';
export { ERROR_CATALOGUE, ServeFnError, createError, type SfErrorCode } from './errors/index.js';
export type { Tensor, TensorSpec, Datatype } from './spec/tensor.js';
export type { BackendSession, BackendMetadata } from './backends/backend.js';
export { createTensor, type TensorValue } from './tensor/tensor-factory.js';
export type { ExecuteRequest, ExecuteResponse, TensorModel, DecoupledTensorModel, DecoupledResponse } from './instance/tensor-model-api.js';
export { REQUEST_FLAG_SEQUENCE_START, REQUEST_FLAG_SEQUENCE_END } from './instance/tensor-model-api.js';
export type {
  InferenceModel, InferenceModelInfo, InferRequest, InferResponse, LoadRequest, ModelRepository, RepositoryIndexEntry, RequestedOutput,
} from './inference/inference-model.js';
export { FolderModelRepository, type FolderModelRepositoryOptions } from './model-repository/folder-model-repository.js';
export * from './adapters/funasr/index.js';
export { TextTokenizer, type TextEncoding, type EncodeOptions } from './tokenizer/tokenizer.js';
