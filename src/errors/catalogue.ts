/**
 * The one catalogue of serve-fn errors. Every error a user can see is listed here with its HTTP
 * status and message template (`%s` placeholders are filled in order). docs/errors.md mirrors this
 * table and test/unit/errors.test.ts keeps the two in step.
 */
export interface ErrorSpec {
  readonly status: number;
  readonly message: string;
}

function spec(status: number, message: string): ErrorSpec {
  return { status, message };
}

export const ERROR_CATALOGUE = {
  // Definition errors: raised at start-up while building model definitions.
  SF_ERR_MODEL_NAME_MISSING: spec(500, "Model class '%s' has no name: pass @Model({ name: '...' })."),
  SF_ERR_MODEL_NOT_DECORATED: spec(500, "Class '%s' is not a model: decorate it with @Model({ name: '...' })."),
  SF_ERR_MODEL_DUPLICATE: spec(500, "Two model classes are named '%s' (version '%s'): give each @Model a distinct name or version."),
  SF_ERR_MODEL_NAME_TAKEN: spec(500, "The %s and the %s: two models would be served as '%s'. Give one another name: rename its folder or @Model, or pass --served-model-name."),
  SF_ERR_ENDPOINT_DUPLICATE: spec(500, "Endpoint %s %s is declared twice: by %s and by %s. Give each method its own path or HTTP method."),
  SF_ERR_ENDPOINT_PATH_INVALID: spec(500, "Endpoint path '%s' on %s must start with '/'."),
  SF_ERR_ENDPOINT_METHOD_INVALID: spec(500, "Endpoint %s uses HTTP method '%s'; use GET, POST, PUT or DELETE."),
  SF_ERR_ENDPOINT_NOT_A_METHOD: spec(500, "%s is decorated with @Endpoint but is not a method of the class."),
  SF_ERR_ENDPOINT_OPTION_INVALID: spec(500, '%s: @Endpoint option %s is invalid: %s.'),
  SF_ERR_BATCH_WITHOUT_ENDPOINT: spec(500, '%s has @Batch but no @Endpoint: add @Endpoint(path) so requests can reach it.'),
  SF_ERR_BATCH_NOT_LIST: spec(500, '%s has @Batch but its parameter is not an array: declare it as `(batch: %s[])`, and return an array of the same length.'),
  SF_ERR_BATCH_SIZE_INVALID: spec(500, '%s: @Batch max size must be an integer >= 1 (got %s).'),
  SF_ERR_BATCH_OPTION_INVALID: spec(500, '%s: @Batch option %s is invalid: %s.'),
  SF_ERR_INSTANCES_INVALID: spec(500, '%s: @Instances %s.'),
  SF_ERR_TENSORS_INVALID: spec(500, '%s: @Tensors %s.'),
  SF_ERR_HOOK_NOT_FUNCTION: spec(500, "%s.%s must be a method (it is a %s)."),
  SF_ERR_DEPENDENCY_UNRESOLVED: spec(500, "Cannot construct model class '%s': %s. Make each constructor dependency @injectable() or register it in the container."),
  SF_ERR_STREAM_BATCHED: spec(500, "%s has @Batch and stream: '%s': streaming endpoints are not batched. Remove @Batch, or the stream option."),
  SF_ERR_STREAM_FORMAT_INVALID: spec(500, "%s: stream must be 'sse', 'ndjson' or 'bytes' (got '%s')."),
  SF_ERR_SOCKET_NOT_A_METHOD: spec(500, '%s is decorated with @WebSocketEndpoint but is not a method of the class.'),
  SF_ERR_SOCKET_OPTION_INVALID: spec(500, '%s: @WebSocketEndpoint option %s is invalid: %s.'),
  SF_ERR_SOCKET_AND_ENDPOINT: spec(500, '%s has @WebSocketEndpoint and %s: a WebSocket method is called once per connection. Give the HTTP route its own method.'),
  SF_ERR_DTO_NOT_DECORATED: spec(500, "%s: the %s DTO '%s' has no class-validator decorators, so %s. Decorate each of its fields, e.g. `@IsString() label!: string`, or `@Allow()` for a field taken as it is."),
  SF_ERR_MODEL_NO_ENDPOINTS: spec(500, "Model class '%s' has no @Endpoint or @WebSocketEndpoint method and no @Tensors interface, so it would serve nothing: decorate a method with @Endpoint(path)."),
  SF_ERR_STREAM_NOT_GENERATOR: spec(500, "%s declares stream: '%s' but is %s: make it an async generator (`async *%s(...)`) that yields each item."),

  // Start-up and entry discovery.
  SF_ERR_ENTRY_NOT_FOUND: spec(500, "No entry found at '%s': pass a .ts/.js file exporting @Model classes, or a folder with serve-fn.config.ts or index.ts."),
  SF_ERR_ENTRY_NO_MODELS: spec(500, "Entry '%s' exports no @Model classes."),
  SF_ERR_NEW_TEMPLATE_UNKNOWN: spec(500, "No template named '%s': choose one of %s."),
  SF_ERR_NEW_TARGET_NOT_EMPTY: spec(500, "'%s' is not empty: serve-fn new writes only into a new or empty folder."),
  SF_ERR_NEW_SERVE_FN_FOLDER: spec(500, "--serve-fn '%s' is a folder, which every npm install in the project would rebuild: give the tarball `npm pack` makes in it, or an npm version range."),
  SF_ERR_PORT_IN_USE: spec(500, '%s is in use by another server: stop it, or choose another port with %s.'),
  SF_ERR_INITIALIZE_FAILED: spec(500, "Model '%s' instance %s failed in initialize(): %s"),
  SF_ERR_FINALIZE_FAILED: spec(500, "Model '%s' instance %s failed in finalize(): %s"),

  // Request-time errors.
  SF_ERR_NOT_FOUND: spec(404, 'Not Found'),
  SF_ERR_BAD_REQUEST: spec(400, '%s'),
  SF_ERR_BODY_INVALID_JSON: spec(400, 'Request body is not valid JSON: %s'),
  SF_ERR_BODY_TOO_LARGE: spec(413, 'Request body is larger than the limit of %s bytes.'),
  SF_ERR_JSON_ANSWER_TOO_LARGE: spec(400, "The answer's JSON could take %s bytes, past the limit of %s bytes (--body-limit): request %s with \"binary_data\": true or in shared memory."),
  SF_ERR_BODY_TOO_DEEP: spec(400, 'Request body nests arrays and objects deeper than %s levels.'),
  SF_ERR_CONTENT_ENCODING_UNSUPPORTED: spec(415, "Content-Encoding '%s' is not supported; send gzip, deflate or identity."),
  SF_ERR_UNSUPPORTED_MEDIA_TYPE: spec(415, "Content type '%s' is not accepted by %s; send %s."),
  SF_ERR_MULTIPART_INVALID: spec(400, 'Multipart body could not be read: %s'),
  SF_ERR_NOT_READY: spec(503, 'Server is not ready: %s.'),
  SF_ERR_DRAINING: spec(503, 'Server is stopping, scheduler for model has stopped accepting new inference requests'),
  SF_ERR_QUEUE_FULL: spec(503, 'Exceeds maximum queue size'),
  SF_ERR_TIMEOUT: spec(503, 'Request timeout expired'),
  SF_ERR_CANCELLED: spec(499, 'Request was cancelled by the client before it ran.'),
  SF_ERR_PRIORITY_INVALID: spec(400, 'Priority %s is out of range: %s.'),
  SF_ERR_TIMEOUT_INVALID: spec(400, 'Timeout %s is invalid: give a non-negative integer number of microseconds.'),
  SF_ERR_SOCKET_LIMIT: spec(503, 'WebSocket endpoint %s has %s open connections, its limit; try again later.'),
  SF_ERR_SOCKET_IDLE: spec(408, 'Connection closed after %s ms without a message from the client.'),
  SF_ERR_MESSAGE_INVALID_JSON: spec(400, 'Message is not valid JSON: %s'),
  SF_ERR_MESSAGE_INVALID: spec(422, 'Message failed validation: %s'),
  SF_ERR_UPGRADE_REQUIRED: spec(426, '%s is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket).'),

  // Security and limits: API key, rate limit, and their settings from the environment.
  SF_ERR_UNAUTHORIZED: spec(401, "Missing or invalid API key: send it as 'Authorization: Bearer <key>' or 'X-API-Key: <key>'."),
  SF_ERR_RATE_LIMITED: spec(429, 'Too many requests: at most %s per %s ms from one client; retry in %s s.'),
  SF_ERR_ENV_INVALID: spec(500, 'Environment variable %s is invalid: %s'),
  SF_ERR_API_RESTRICTED: spec(403, "This %s is restricted, expecting header '%s'"),
  SF_ERR_API_LOCAL_ONLY: spec(403, "This %s is restricted to clients on the server's own host; to serve others, set %s=%s:<header>=<value> and send that header."),

  // Execution errors: raised by the runtime while running model code.
  SF_ERR_EXECUTION_FAILED: spec(500, "Model '%s' failed in %s: %s"),
  SF_ERR_BATCH_RESULT_LENGTH: spec(500, '%s returned %s results for a batch of %s requests: a batched method (@Batch, or execute(requests)) must return one result (or Error) per request, in order.'),
  SF_ERR_BATCH_RESULT_NOT_ARRAY: spec(500, '%s must return an array for its batch, got %s.'),
  /** A Python backend model's TritonError; its status follows the error's code (python-stub-instance.ts). */
  SF_ERR_PYTHON_MODEL_ERROR: spec(500, "Model '%s' answered with an error: %s"),
  SF_ERR_INSTANCE_CRASHED: spec(500, "Model '%s' instance %s stopped while running this request (%s); the instance is being restarted."),
  SF_ERR_INSTANCE_RESTART_LIMIT: spec(503, "Model '%s' instance %s crashed %s times in %s ms; it is not restarted until the window passes."),
  SF_ERR_MODEL_UNAVAILABLE: spec(503, "Model '%s' has no running instance: every instance crashed past its restart limit. The next restart is in %s ms."),
  SF_ERR_RESPONSE_NOT_SERIALIZABLE: spec(500, '%s returned a value that cannot be sent back: %s'),
  SF_ERR_STREAM_NOT_ITERABLE: spec(500, "%s declares stream: '%s' but returned %s: make it an async generator (`async *%s(...)`) or return an AsyncIterable."),
  SF_ERR_STREAM_CHUNK_NOT_BYTES: spec(500, "%s streams 'bytes' but yielded %s: yield Buffer or Uint8Array chunks, or use stream: 'ndjson'."),

  // Models, tensors and backends.
  SF_ERR_MODEL_UNKNOWN: spec(404, "Request for unknown model: '%s' is not found"),
  SF_ERR_MODEL_VERSION_UNKNOWN: spec(404, "Request for unknown model: '%s' version %s is not found"),
  SF_ERR_MODEL_NOT_READY: spec(503, "Model '%s' version %s is not ready"),
  SF_ERR_TENSOR_DATATYPE: spec(400, "Tensor '%s': expected datatype %s, got %s."),
  SF_ERR_TENSOR_SHAPE: spec(400, "Tensor '%s': expected shape %s, got %s."),
  SF_ERR_TENSOR_DATA: spec(400, "Tensor '%s': %s"),
  SF_ERR_TENSOR_MISSING: spec(400, "Expected input '%s' for model '%s' is missing."),
  SF_ERR_TENSOR_UNEXPECTED: spec(400, "Unexpected input '%s' for model '%s'."),
  SF_ERR_OUTPUT_UNKNOWN: spec(400, "Unexpected inference output '%s' for model '%s'."),
  SF_ERR_BACKEND_UNAVAILABLE: spec(501, "Backend '%s' is not available: %s"),
  SF_ERR_BACKEND_UNSUPPORTED: spec(501, "Backend '%s' is not supported yet: %s"),
  SF_ERR_BACKEND_LOAD_FAILED: spec(500, "Backend '%s' could not load '%s': %s"),
  SF_ERR_BACKEND_RUN_FAILED: spec(500, "Backend '%s' failed to run '%s': %s"),
  SF_ERR_BACKEND_INPUT_REJECTED: spec(400, "Backend '%s' refused the inputs: %s"),
  SF_ERR_CONFIG_PARSE: spec(400, '%s:%s:%s: %s'),
  SF_ERR_CONFIG_INVALID: spec(400, "Model configuration for '%s' is invalid: %s"),
  SF_ERR_REPOSITORY_INVALID: spec(400, "Model repository '%s' is invalid: %s"),
  SF_ERR_ENSEMBLE_INVALID: spec(400, "Ensemble '%s' is invalid: %s"),

  // KServe v2 / Triton inference protocol (Triton's own wording, which clients match on).
  SF_ERR_METHOD_NOT_ALLOWED: spec(405, 'Method Not Allowed'),
  SF_ERR_UNSUPPORTED: spec(501, '%s'),
  SF_ERR_TRACE_SETTING_INVALID: spec(400, "trace setting '%s' %s"),
  SF_ERR_MODEL_CONTROL_DISABLED: spec(503, 'explicit model load / unload is not allowed if polling is enabled'),
  SF_ERR_MODEL_POLL_FAILED: spec(400, "failed to load '%s', failed to poll from model repository: %s"),
  SF_ERR_MODEL_FILES_UNWRITABLE: spec(500, "failed to load '%s', failed to poll from model repository: file parameter '%s' could not be written (%s)"),
  SF_ERR_MODEL_LOAD_FAILED: spec(400, "load failed for model '%s': %s"),
  SF_ERR_SEQUENCE_ID_MISSING: spec(400, "inference request to model '%s' must specify a non-zero or non-empty correlation ID"),
  SF_ERR_SEQUENCE_NOT_STARTED: spec(400, "inference request for sequence %s to model '%s' must specify the START flag on the first request of the sequence (the sequence is unknown, has ended, or was freed after %s µs idle)"),
  SF_ERR_SEQUENCE_UNSUPPORTED: spec(400, "inference request to model '%s' sets '%s', but the model is not stateful: its configuration has no sequence_batching"),

  // Decorated (@Model) models on the inference protocol.
  SF_ERR_MODEL_NO_TENSOR_INTERFACE: spec(400, "Model '%s' declares no tensor interface (no @Tensors inputs or outputs and execute method), so it cannot run KServe v2 inference requests: call its endpoints (%s)."),
  SF_ERR_MODEL_NOT_IN_REPOSITORY: spec(400, "Model '%s' is served by its @Model class, not from the model repository: it cannot be loaded or unloaded while the server runs."),

  // System shared memory (Triton's extension_shared_memory.md; Triton's shared_memory_manager wording).
  SF_ERR_SHM_UNAVAILABLE: spec(501, 'System shared memory is not available: %s'),
  SF_ERR_SHM_REGION_EXISTS: spec(400, "shared memory region '%s' already in manager"),
  SF_ERR_SHM_REGION_UNKNOWN: spec(400, "Unable to find shared memory region: '%s'"),
  SF_ERR_SHM_REGISTER_FAILED: spec(400, "failed to register shared memory region '%s': %s"),
  SF_ERR_SHM_OFFSET_INVALID: spec(400, "Invalid offset for shared memory region: '%s'"),
  SF_ERR_SHM_BYTE_SIZE_INVALID: spec(400, "Invalid offset + byte size for shared memory region: '%s'"),
  SF_ERR_SHM_LIMIT: spec(400, "failed to register shared memory region '%s': the server holds at most %s (%s)"),
  SF_ERR_SHM_OBJECT_CHANGED: spec(400, "shared memory region '%s' no longer covers its range: %s"),

  // Ascend NPU (native addon).
  SF_ERR_NPU_UNAVAILABLE: spec(501, 'Ascend NPU backend is not available: %s'),
  SF_ERR_NPU_ACL: spec(500, '%s failed with ACL error %s: %s'),
  SF_ERR_NPU_GE: spec(500, '%s failed with GE status %s: %s'),

  // Text models: the text engine (src/text) and the TEI, OpenAI, Cohere/Jina/vLLM routes.
  SF_ERR_TEXT_EMPTY: spec(400, 'Input validation error: %s cannot be empty'),
  SF_ERR_TEXT_VALIDATION: spec(422, 'Input validation error: %s'),
  SF_ERR_TEXT_BATCH_TOO_LARGE: spec(413, 'batch size %s > maximum allowed batch size %s'),
  SF_ERR_TEXT_TOO_LONG: spec(422, 'Input validation error: `inputs` must have less than %s tokens. Given: %s'),
  SF_ERR_TEXT_ANSWER_TOO_LARGE: spec(413, 'Input validation error: the answer would be about %s bytes of JSON, over the limit of %s bytes (--max-answer-bytes); send fewer or shorter inputs'),
  SF_ERR_TEXT_OVERLOADED: spec(429, 'Model is overloaded'),
  SF_ERR_TEXT_WRONG_TASK: spec(424, "model '%s' is not a %s model"),
  SF_ERR_TEXT_BACKEND: spec(424, "Model '%s' failed to run its forward pass; the server log has the error."),
  SF_ERR_TEXT_MODEL_UNKNOWN: spec(404, "Text model '%s' is not served here (served: %s)"),
  SF_ERR_TEXT_MODEL_AMBIGUOUS: spec(422, "Several text models can %s (%s): name one in the request's `model` field"),
  SF_ERR_TOKENIZER_INVALID: spec(500, 'Tokenizer %s could not be used: %s'),
  SF_ERR_TOKENIZATION_FAILED: spec(422, 'Tokenizer error: %s'),
  SF_ERR_TEXT_MODEL_FOLDER_INVALID: spec(500, "Text model folder '%s' is invalid: %s"),
  SF_ERR_TEXT_MODEL_INVALID: spec(500, '%s: @TextModel %s.'),

  // Generative models (src/generation): decoder exports, the iteration-level scheduler.
  SF_ERR_GENERATIVE_FOLDER_INVALID: spec(500, "Generative model folder '%s' is invalid: %s"),
  SF_ERR_GENERATIVE_MODEL_INVALID: spec(500, '%s: @GenerativeModel %s.'),
  SF_ERR_DECODER_INVALID: spec(500, "Model '%s' cannot run as a decoder with a KV cache: %s"),
  SF_ERR_DECODER_STEP_FAILED: spec(500, "Model '%s' failed to run a decoder step; the server log has the error."),
  // Generative text: the OpenAI / vLLM chat and completions routes and Triton's generate extension (src/protocol/openai, src/generation).
  SF_ERR_GENERATION_MODEL_UNKNOWN: spec(404, "The model `%s` does not exist."),
  SF_ERR_GENERATION_CONTEXT_EXCEEDED: spec(400, "This model's maximum context length is %s tokens. However, you requested %s output tokens and your prompt contains %s input tokens, for a total of %s tokens. Please reduce the length of the input prompt or the number of requested output tokens."),
  SF_ERR_CHAT_TEMPLATE_INVALID: spec(500, "The chat template could not be parsed: %s"),
  SF_ERR_CHAT_TEMPLATE_MISSING: spec(400, "Model '%s' has no chat template (tokenizer_config.json's `chat_template`): use /v1/completions, or pass `chat_template`."),
  SF_ERR_CHAT_TEMPLATE_FAILED: spec(400, "The chat template could not be applied to these messages: %s"),
  SF_ERR_STRUCTURED_OUTPUT_UNSUPPORTED: spec(400, "Model '%s' has no grammar engine for its vocabulary, so `%s` cannot be enforced."),
  // Generative text: GGUF files (node-llama-cpp) and structured outputs (xgrammar).
  SF_ERR_GGUF_RUNTIME_MISSING: spec(500, "Serving the GGUF file '%s' needs node-llama-cpp, an optional peer dependency of serve-fn: run `npm i node-llama-cpp@%s` in your project (%s)"),
  SF_ERR_GGUF_INVALID: spec(500, "GGUF file '%s' cannot be served: %s"),
  SF_ERR_STRUCTURED_OUTPUT_INVALID: spec(400, 'Invalid structured output (%s): %s'),
  // Speech models: FunASR export folders (src/speech) and the audio routes.
  SF_ERR_SPEECH_FOLDER_INVALID: spec(500, "Speech model folder '%s' is invalid: %s"),
  SF_ERR_AUDIO_INVALID: spec(400, 'Audio could not be used: %s'),
  SF_ERR_AUDIO_TOO_LONG: spec(413, 'Audio is %s s long, over the limit of %s s; split it into shorter files'),
  SF_ERR_AUDIO_OVER_MODEL_LENGTH: spec(400, "Audio is %s s long; speech model '%s' is a compiled .om whose speech input takes at most %s s (%s frames); send shorter audio, or serve a VAD model beside it to cut the audio into segments"),
  SF_ERR_SPEECH_MODEL_UNKNOWN: spec(404, "Speech model '%s' is not served here (served: %s)"),
  SF_ERR_DIFFUSION_FOLDER_INVALID: spec(500, "Diffusion pipeline folder '%s' cannot be served: %s"),
  SF_ERR_DIFFUSION_MODEL_UNKNOWN: spec(404, "The model '%s' does not exist (served image models: %s)"),
  SF_ERR_IMAGE_ENCODER_MISSING: spec(500, 'Encoding %s images needs the optional dependency sharp, which could not be loaded (%s): run `npm install sharp@%s`'),
  SF_ERR_DIFFUSION_JOB_UNKNOWN: spec(404, "No image job '%s' (jobs are kept for %s s after they end)"),
} as const satisfies Record<string, ErrorSpec>;

export type SfErrorCode = keyof typeof ERROR_CATALOGUE;

export function isErrorCode(code: unknown): code is SfErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CATALOGUE, code);
}
