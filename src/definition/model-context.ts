import type { Logger } from 'pino';
import type { BackendSession } from '../backends/backend.js';
import type { TextTokenizer } from '../tokenizer/tokenizer.js';

/**
 * The facts Triton's Python backend passes in `args` (model name and version, instance name, kind
 * and device id, repository folder, config): plain data, sent to each instance's thread.
 */
export interface ModelContextData {
  readonly modelName: string;
  readonly modelVersion: string;
  /** Triton's `model_instance_name`: `<model>_<index>`. */
  readonly instanceName: string;
  readonly instanceIndex: number;
  readonly instanceCount: number;
  readonly deviceKind: 'cpu' | 'gpu' | 'npu';
  readonly deviceId: number;
  /**
   * Folder of the served entry: the file given to `serve-fn`, or the folder's index.ts or
   * serve-fn.config.ts, even when the class is declared in another file (the process's working
   * folder for an embedded server given no `moduleUrl`). For a repository model, its folder in the
   * repository, as Triton's `model_repository` argument.
   */
  readonly modelDir: string;
  /** Parsed model configuration (config.pbtxt for repository models; the decorator options otherwise). */
  readonly config: Readonly<Record<string, unknown>>;
}

export interface LoadModelOptions {
  /** `cpu`, `gpu:<id>` or `npu:<id>`; defaults to the instance's own device. */
  readonly device?: string;
  /**
   * Backend settings, e.g. ONNX Runtime `intraOpNumThreads` or `graphOptimizationLevel`. An ONNX
   * file on an NPU (GE) takes `slots` (execution slots, default 1), `input_shape` (the ONNX
   * parser's), `ge.*` (GEInitialize), `session.ge.*` (each GE session) and `graph.ge.*` (the
   * graph's), as Huawei's Triton GE backend names them; serve-fn sets
   * `session.ge.exec.precision_mode_v2: 'origin'` (the model's own precision, not GE's fp16
   * default) unless a precision mode is given.
   */
  readonly options?: Readonly<Record<string, unknown>>;
}

export interface InferOptions {
  /**
   * Endpoint method to call; needed only when the model has several endpoints. `execute` calls the
   * model's @Tensors interface with a KServe v2 request (`{ inputs, outputs? }`), as for a repository model.
   */
  readonly method?: string;
  readonly version?: string;
}

/** What `initialize(ctx)` receives: the facts above plus the instance's services. */
export interface ModelContext extends ModelContextData {
  /**
   * Loads a model file (`.onnx` with ONNX Runtime, or through GE when the device is an Ascend NPU;
   * `.om` on an Ascend NPU) into this instance's thread; a relative path is taken from `modelDir`
   * (the entry's folder, see above). Sessions are disposed after `finalize`.
   */
  loadModel(path: string, options?: LoadModelOptions): Promise<BackendSession>;
  /**
   * Loads a Hugging Face `tokenizer.json` (with its tokenizer_config.json beside it), for a model
   * that tokenizes text itself; a relative path is taken from `modelDir`. The tokenizer is the one
   * @TextModel serving uses: HF's Rust tokenizers, UTF-8 byte offsets, per-call truncation.
   */
  loadTokenizer(path: string): Promise<TextTokenizer>;
  /**
   * Calls another served model through its queue and batcher (Triton's BLS) and resolves with its
   * result. Calling a model whose every instance is waiting on this call would deadlock.
   */
  infer<R = unknown>(model: string, input: unknown, options?: InferOptions): Promise<R>;
  /**
   * The server's logger (pino) with `model`, `version` and `instance` on each line; a method's
   * `info.logger` adds the request's id. In a worker thread the lines go to the server's logger
   * through the instance's message channel, so they share its level, format and destination,
   * where `console.log` would write raw text into the JSON log.
   */
  readonly logger: Logger;
}

/** Extra request facts a method receives as its second argument (one per request when batched). */
export interface RequestInfo {
  /** The request's id: the client's or proxy's `x-request-id` when acceptable, else a UUID; it is in the answer's `x-request-id` and the access log's `reqId`. */
  readonly requestId: string;
  /** ctx.logger with `reqId`: this request's id on each line. */
  readonly logger: Logger;
  readonly params: Readonly<Record<string, unknown>>;
  readonly query: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;
}

/** What a @WebSocketEndpoint method receives as its second argument, once per connection. */
export interface SocketContext extends RequestInfo {
  /** Unique within the server process; appears in logs. */
  readonly connectionId: string;
  /** The instance that runs the whole connection. */
  readonly instanceIndex: number;
}
