import type { FastifyInstance } from 'fastify';
import type { ModelRepository } from '../inference/inference-model.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import { stringifyJson } from '../tensor/index.js';
import { registerGenerateRoutes } from './kserve-generate-routes.js';
import { registerInferRoutes } from './kserve-infer-route.js';
import { registerModelRoutes } from './kserve-model-routes.js';
import { registerRepositoryRoutes } from './kserve-repository-routes.js';
import { registerServerRoutes } from './kserve-server-routes.js';
import { registerSharedMemoryRoutes } from './kserve-shared-memory-routes.js';
import { registerTraceRoutes } from './kserve-trace-routes.js';
import { TraceSettings } from '../tracing/trace-settings.js';
import { installProtocolErrorHandling } from './protocol-errors.js';
import { SystemSharedMemoryRegistry } from './system-shared-memory/registry.js';

/** Triton's default `--http-max-input-size` (1 << 26, Triton's `tritonserver --help`). */
export const DEFAULT_PROTOCOL_BODY_LIMIT = 64 * 1024 * 1024;

/** The server metadata `extensions` that this layer implements (KServe v2 required_api.md). */
export const KSERVE_EXTENSIONS: readonly string[] = [
  'binary_tensor_data',
  'model_configuration',
  'model_repository',
  'statistics',
  'schedule_policy',
  'parameters',
  'sequence',
  'trace',
];

/** Where the system has POSIX shared memory (/dev/shm), Triton's extension (extension_shared_memory.md) is served too. */
export function protocolExtensions(sharedMemory: SystemSharedMemoryRegistry): readonly string[] {
  return sharedMemory.available ? [...KSERVE_EXTENSIONS, 'system_shared_memory'] : KSERVE_EXTENSIONS;
}

export interface KserveProtocolOptions {
  readonly repository: ModelRepository;
  readonly recorder: InferenceRecorder;
  readonly serverName: string;
  readonly serverVersion: string;
  /** Server metadata `extensions`; {@link protocolExtensions} by default. */
  readonly extensions?: readonly string[];
  /** Whether the server serves (false while starting or draining); /v2/health/ready also needs every model ready. */
  readonly ready: () => boolean;
  /** Largest request body, compressed or decompressed, in bytes; 64 MiB by default. */
  readonly bodyLimit?: number;
  /** Whether a 500 answers with the error's message (development) or a generic one and the request id; false by default. */
  readonly exposeErrors?: boolean;
  /** The system shared-memory regions, shared with the gRPC server; a registry of its own by default, emptied when the app closes. */
  readonly sharedMemory?: SystemSharedMemoryRegistry;
  /** Triton's trace settings, shared with the gRPC server; off (level OFF) by default. */
  readonly traceSettings?: TraceSettings;
}

/**
 * The KServe v2 / Triton HTTP protocol under /v2, as an encapsulated fastify plugin: its content-type
 * parser (every body as a Buffer, since infer bodies mix JSON and tensor bytes), error handler and
 * not-found handler apply to /v2 only and leave the user's routes alone.
 */
export async function kserveProtocol(app: FastifyInstance, opts: KserveProtocolOptions): Promise<void> {
  const bodyLimit = opts.bodyLimit ?? DEFAULT_PROTOCOL_BODY_LIMIT;
  const errors = { bodyLimit, exposeErrors: opts.exposeErrors ?? false };
  const sharedMemory = opts.sharedMemory ?? new SystemSharedMemoryRegistry();
  const traceSettings = opts.traceSettings ?? new TraceSettings(false);
  await app.register(
    async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body));
      // The route schemas document the protocol; bodies are read by the routes and answers are
      // written with stringifyJson, which keeps INT64 values exact.
      scope.setValidatorCompiler(() => () => true);
      scope.setSerializerCompiler(() => (data) => stringifyJson(data));
      installProtocolErrorHandling(scope, errors);
      registerServerRoutes(scope, { ...opts, extensions: opts.extensions ?? protocolExtensions(sharedMemory) });
      registerModelRoutes(scope, opts);
      registerInferRoutes(scope, { repository: opts.repository, bodyLimit, sharedMemory, traceSettings });
      registerTraceRoutes(scope, { repository: opts.repository, traceSettings });
      registerGenerateRoutes(scope, { repository: opts.repository, ...errors, traceSettings });
      registerRepositoryRoutes(scope, opts);
      registerSharedMemoryRoutes(scope, { sharedMemory });
      if (!opts.sharedMemory) scope.addHook('onClose', async () => sharedMemory.unregister());
    },
    { prefix: '/v2' },
  );
}
