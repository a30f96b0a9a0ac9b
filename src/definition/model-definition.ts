import type { RestartPolicy } from '../spec/restart-policy.js';
import type { BatchPolicy } from '../spec/batch-policy.js';
import type { DtoClass, HttpMethod, StreamFormat, TextModelDeclaration, GenerativeModelDeclaration } from '../metadata/records.js';
import type { ConfigTensor } from '../spec/config-tensor.js';

/** Frozen, checked descriptions of served models, built once at start-up from decorator records. */

export type ModelClass = new (...args: never[]) => object;

export interface EndpointDefinition {
  /** `ClassName.method`, used in logs and error messages. */
  readonly id: string;
  readonly methodName: string;
  readonly httpMethod: HttpMethod;
  readonly path: string;
  readonly body?: DtoClass;
  readonly query?: DtoClass;
  readonly params?: DtoClass;
  readonly response?: DtoClass;
  readonly consumes: 'json' | 'multipart';
  readonly produces: string;
  readonly summary?: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly status: number;
  /** Present when the method's async iterable result is streamed to the client. */
  readonly stream?: StreamFormat;
  /** Present when the method takes a batch (a list of requests). */
  readonly batch?: BatchPolicy;
  /** The endpoint's own JSON body limit in bytes; absent, the server's jsonBodyLimit applies. */
  readonly bodyLimit?: number;
}

export interface SocketEndpointDefinition {
  /** `ClassName.method`, used in logs and error messages. */
  readonly id: string;
  readonly methodName: string;
  readonly path: string;
  readonly message?: DtoClass;
  readonly response?: DtoClass;
  readonly idleTimeoutMs: number;
  readonly maxConnections: number;
  readonly summary?: string;
  readonly description?: string;
  readonly tags: readonly string[];
}

export interface InstanceGroupDefinition {
  readonly count: number;
  readonly kind: 'cpu' | 'gpu' | 'npu';
  readonly devices: readonly number[];
  readonly inline: boolean;
  /** @Instances' restartLimit; the server's restart policy applies without one. */
  readonly restartPolicy?: RestartPolicy;
}

/** A class's KServe v2 tensor interface (@Tensors), served by its `execute` method. */
export interface TensorInterfaceDefinition {
  readonly inputs: readonly ConfigTensor[];
  readonly outputs: readonly ConfigTensor[];
  /** Triton's max_batch_size: 0 = no batch dimension. */
  readonly maxBatchSize: number;
  /** Present when `execute` has @Batch (Triton's dynamic_batching); absent, each request is one execution. */
  readonly batch?: BatchPolicy;
}

export interface ModelDefinition {
  readonly name: string;
  readonly version: string;
  readonly description?: string;
  readonly className: string;
  readonly target: ModelClass;
  readonly instances: InstanceGroupDefinition;
  readonly endpoints: readonly EndpointDefinition[];
  /** @WebSocketEndpoint methods, each called once per connection. */
  readonly sockets: readonly SocketEndpointDefinition[];
  /** Present when the class declares @Tensors, or @TextModel (which implies one). */
  readonly tensors?: TensorInterfaceDefinition;
  /** Present when the class declares @TextModel: its execute runs a text model's forward pass. */
  readonly text?: TextModelDeclaration;
  /** Present when the class declares @GenerativeModel: its step hook runs a generator's decoder steps. */
  readonly generative?: GenerativeModelDeclaration;
  readonly hooks: { readonly initialize: boolean; readonly finalize: boolean };
}
