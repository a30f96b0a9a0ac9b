import type { FastifyInstance } from 'fastify';
import type { ModelRepository } from '../inference/inference-model.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import { stringifyJson } from '../tensor/index.js';
import { registerGenerateRoutes } from './kserve-generate-routes.js';
import { registerInferRoutes } from './kserve-infer-route.js';
import { registerModelRoutes } from './kserve-model-routes.js';
import { registerRepositoryRoutes } from './kserve-repository-routes.js';
import { registerServerRoutes } from './kserve-server-routes.js';
import { installProtocolErrorHandling } from './protocol-errors.js';

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
];

export interface KserveProtocolOptions {
  readonly repository: ModelRepository;
  readonly recorder: InferenceRecorder;
  readonly serverName: string;
  readonly serverVersion: string;
  /** Server metadata `extensions`; {@link KSERVE_EXTENSIONS} by default. */
  readonly extensions?: readonly string[];
  /** Whether the server serves (false while starting or draining); /v2/health/ready also needs every model ready. */
  readonly ready: () => boolean;
  /** Largest request body, compressed or decompressed, in bytes; 64 MiB by default. */
  readonly bodyLimit?: number;
  /** Whether a 500 answers with the error's message (development) or a generic one and the request id; false by default. */
  readonly exposeErrors?: boolean;
}

/**
 * The KServe v2 / Triton HTTP protocol under /v2, as an encapsulated fastify plugin: its content-type
 * parser (every body as a Buffer, since infer bodies mix JSON and tensor bytes), error handler and
 * not-found handler apply to /v2 only and leave the user's routes alone.
 */
export async function kserveProtocol(app: FastifyInstance, opts: KserveProtocolOptions): Promise<void> {
  const bodyLimit = opts.bodyLimit ?? DEFAULT_PROTOCOL_BODY_LIMIT;
  const errors = { bodyLimit, exposeErrors: opts.exposeErrors ?? false };
  await app.register(
    async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body));
      // The route schemas document the protocol; bodies are read by the routes and answers are
      // written with stringifyJson, which keeps INT64 values exact.
      scope.setValidatorCompiler(() => () => true);
      scope.setSerializerCompiler(() => (data) => stringifyJson(data));
      installProtocolErrorHandling(scope, errors);
      registerServerRoutes(scope, { ...opts, extensions: opts.extensions ?? KSERVE_EXTENSIONS });
      registerModelRoutes(scope, opts);
      registerInferRoutes(scope, { repository: opts.repository, bodyLimit });
      registerGenerateRoutes(scope, { repository: opts.repository, ...errors });
      registerRepositoryRoutes(scope, opts);
    },
    { prefix: '/v2' },
  );
}
