import type { BatchPolicyInput } from '../spec/batch-policy.js';
import type { Datatype } from '../spec/tensor.js';

/** What the decorators record, untouched; the definition builder checks and freezes it at start-up. */

export type DtoClass = new (...args: any[]) => object;
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface ModelOptions {
  /** The model's name in routes, metrics and the inference protocol. */
  readonly name: string;
  readonly version?: string;
  readonly description?: string;
  /** OpenAPI tag; defaults to the model name. */
  readonly tag?: string;
}

export interface ModelRecord {
  readonly className: string;
  readonly options: Partial<ModelOptions>;
}

export interface EndpointOptions {
  readonly method?: HttpMethod;
  /** Request body DTO (class-validator class). Multipart form fields and files land here too. */
  readonly body?: DtoClass;
  readonly query?: DtoClass;
  /** Path parameters DTO, for paths such as `/voices/:id`. */
  readonly params?: DtoClass;
  /** Response DTO, documented in OpenAPI and used to serialise the answer. */
  readonly response?: DtoClass;
  /** `json` (default) or `multipart` (`multipart/form-data`, fields and files), like FastAPI's Form()/File(). */
  readonly consumes?: 'json' | 'multipart';
  /** Content type of a Buffer result (default `application/octet-stream`), e.g. `audio/wav`. */
  readonly produces?: string;
  readonly summary?: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  /** Status code of a successful answer (default 200). */
  readonly status?: number;
  /**
   * The method returns an async iterable whose items are streamed as they are produced: `sse`
   * (`data: <json>` events), `ndjson` (one JSON per line) or `bytes` (Buffer chunks, sent as `produces`).
   */
  readonly stream?: StreamFormat;
  /**
   * Largest JSON body of this endpoint in bytes, in place of the server's `jsonBodyLimit` (1 MiB by
   * default); still capped by the server's `bodyLimit`. Multipart endpoints keep `bodyLimit`.
   */
  readonly bodyLimit?: number;
}

export type StreamFormat = 'sse' | 'ndjson' | 'bytes';

export interface EndpointRecord {
  readonly method: string;
  readonly path: string;
  readonly options: EndpointOptions;
  readonly isFunction: boolean;
  readonly kindOfMember: string;
}

export interface WebSocketEndpointOptions {
  /**
   * DTO of the client's text messages: each is parsed as JSON, validated and handed over as an
   * instance of this class. Without it, text messages arrive as strings. Binary messages always
   * arrive as Uint8Array.
   */
  readonly message?: DtoClass;
  /** DTO of the messages the server sends, for the OpenAPI document. */
  readonly response?: DtoClass;
  /** A connection that sends nothing for this long is closed with 1001 (default 60 000 ms). */
  readonly idleTimeoutMs?: number;
  /** Open connections the endpoint accepts; more are refused with 503 before the upgrade (default 1024). */
  readonly maxConnections?: number;
  readonly summary?: string;
  readonly description?: string;
  readonly tags?: readonly string[];
}

export interface WebSocketEndpointRecord {
  readonly method: string;
  readonly path: string;
  readonly options: WebSocketEndpointOptions;
  readonly isFunction: boolean;
}

export interface BatchRecord {
  readonly method: string;
  readonly policy: BatchPolicyInput;
  /** Emitted type of the first parameter; `Array` for a list signature. */
  readonly firstParamType: unknown;
  readonly metadataEmitted: boolean;
}

export interface InstancesOptions {
  readonly kind?: 'cpu' | 'gpu' | 'npu';
  /** Device ids; instance i gets devices[i % devices.length]. */
  readonly devices?: readonly number[];
  /** Run on the HTTP thread. Only for models that do nothing but async I/O. */
  readonly inline?: boolean;
  /**
   * This model's restart limit, `'<restarts>/<window>'` such as `'3/30s'`, as a repository model's
   * `restart_limit` parameter sets it; it wins over the server's (--restart-limit).
   */
  readonly restartLimit?: string;
}

export interface InstancesRecord {
  readonly count: number;
  readonly options: InstancesOptions;
}

/** One input or output of a tensor interface, as Triton's model configuration declares it (model_config.proto ModelInput / ModelOutput). */
export interface TensorDeclaration {
  readonly name: string;
  readonly datatype: Datatype;
  /** The shape without the batch dimension; -1 is a variable dimension. */
  readonly dims: readonly number[];
  /** Inputs only: the request may leave it out (Triton's `optional`). */
  readonly optional?: boolean;
  /**
   * Inputs only: a request may give a 0 for a variable dimension (an empty tensor). Without it a
   * zero-sized dimension is refused with 400 before `execute` runs, since a model that cannot
   * run on nothing (ONNX Runtime's Conv and Reshape, say) would fail as a server error.
   */
  readonly allowEmpty?: boolean;
}

export interface TensorsOptions {
  readonly inputs: readonly TensorDeclaration[];
  readonly outputs: readonly TensorDeclaration[];
  /**
   * Triton's max_batch_size: above 0, every input and output carries a batch dimension in front
   * and one execution holds at most this many rows. Defaults to the @Batch size on `execute`, else 0.
   */
  readonly maxBatchSize?: number;
}

export interface TensorsRecord {
  readonly options: TensorsOptions;
}

/** The tasks a text model serves (TEI's model types; `sparse` is SPLADE). */
export const TEXT_TASKS = ['embed', 'rerank', 'classify', 'sparse'] as const;
export type TextTaskName = (typeof TEXT_TASKS)[number];

/** How token states become one vector: sentence-transformers' pooling modes, and SPLADE's. */
export const POOLING_MODES = ['cls', 'mean', 'max', 'last-token', 'weighted-mean', 'splade'] as const;
export type PoolingModeName = (typeof POOLING_MODES)[number];

/** @TextModel: what serve-fn needs to tokenize, batch, pool and score for a class that runs the forward pass. */
export interface TextModelDeclaration {
  readonly task: TextTaskName;
  /**
   * A sentence-transformers / optimum export folder, relative to the model's module file: its
   * tokenizer.json, pooling, normalisation, length limit, prompts and labels are read from it (the
   * options below override them); its model file is left to the class.
   */
  readonly folder?: string;
  /** tokenizer.json, relative to the module file; default `<folder>/tokenizer.json`. */
  readonly tokenizer?: string;
  readonly pooling?: PoolingModeName;
  readonly maxInputLength?: number;
  readonly prompts?: Readonly<Record<string, string>>;
  readonly defaultPromptName?: string;
  /** id2label in id order, for classifiers. */
  readonly labels?: readonly string[];
  /** An embedder whose forward pass pools itself returns `sentence_embedding` [rows, width] instead of `last_hidden_state`. */
  readonly pooledOutput?: boolean;
  /** TEI's batching and admission limits for this model (defaults: TEI's, or the server's flags). */
  readonly maxBatchTokens?: number;
  readonly maxBatchRequests?: number;
  readonly maxClientBatchSize?: number;
  readonly maxConcurrentRequests?: number;
  readonly autoTruncate?: boolean;
  readonly batchByLength?: boolean;
}

export interface TextModelRecord {
  readonly options: TextModelDeclaration;
}

/**
 * @GenerativeModel: what serve-fn needs to tokenize, template, schedule, sample and detokenize for
 * a class whose step hook (DecoderStepHook) computes the logits with a KV cache of its own.
 */
export interface GenerativeModelDeclaration {
  /**
   * A generative model folder, relative to the model's module file, as Hugging Face ships it:
   * config.json (vocab_size, max_position_embeddings, the KV shape), tokenizer.json,
   * tokenizer_config.json (its chat_template) and generation_config.json (every eos_token_id and
   * the sampling defaults). Its weights are left to the class.
   */
  readonly folder: string;
  /** The context (vLLM's --max-model-len), at most config.json's max_position_embeddings; default: the server's, else that. */
  readonly maxModelLen?: number;
  /** Sequences in one step (vLLM's --max-num-seqs); default: the server's. */
  readonly maxNumSeqs?: number;
  /** Tokens in one step (vLLM's --max-num-batched-tokens); default: the server's. */
  readonly maxNumBatchedTokens?: number;
  /**
   * Tokens the class's KV cache holds per instance, over all its sequences; past it the newest
   * sequence is preempted and recomputed later. Default: --kv-cache-space over config.json's
   * float32 bytes per token, as for a folder.
   */
  readonly kvCacheTokens?: number;
}

export interface GenerativeModelRecord {
  readonly options: GenerativeModelDeclaration;
}
