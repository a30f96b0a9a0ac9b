import type { FastifyInstance } from 'fastify';
import { createError } from '../errors/index.js';
import type { ModelRepository } from '../inference/inference-model.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import { MODEL_METADATA_SCHEMA, routeDoc, STATISTICS_SCHEMA } from './kserve-openapi.js';
import { modelConfig, modelMetadata, modelStatistics } from './model-metadata.js';

/** A model route with and without `/versions/{v}`; Triton's versions are integers (`([0-9]+)`), anything else is not a route. */
export const MODEL_PATHS = ['/models/:model', '/models/:model/versions/:version(^\\d+)'] as const;

export interface ModelParams {
  readonly model: string;
  readonly version?: string;
}

export interface ModelRoutesOptions {
  readonly repository: ModelRepository;
  readonly recorder: InferenceRecorder;
}

/** The restricted API group (restricted-apis.ts) of the statistics routes; configuration's is `model-config`. */
const STATISTICS = { apiGroup: 'statistics' } as const;

/** Model metadata, readiness, configuration and statistics (KServe v2 required_api.md; Triton's extension_statistics.md). */
export function registerModelRoutes(scope: FastifyInstance, opts: ModelRoutesOptions): void {
  const { repository, recorder } = opts;
  scope.get('/models/stats', { schema: routeDoc('Statistics of every model', { response: STATISTICS_SCHEMA }), config: STATISTICS }, async () =>
    modelStatistics(recorder, repository),
  );
  for (const path of MODEL_PATHS) {
    scope.get<{ Params: ModelParams }>(path, { schema: routeDoc('Model metadata', { response: MODEL_METADATA_SCHEMA }) }, async (request) =>
      modelMetadata(repository, request.params.model, request.params.version),
    );
    scope.get<{ Params: ModelParams }>(`${path}/ready`, { schema: routeDoc('Model readiness: 200 when ready, 400 otherwise') }, async (request, reply) => {
      // As Triton: an unknown model is a 404, a known one that is not ready a 400 with this message.
      if (!repository.get(request.params.model, request.params.version).ready()) throw createError('SF_ERR_BAD_REQUEST', 'Model version not ready');
      return reply.code(200).send();
    });
    scope.get<{ Params: ModelParams }>(`${path}/config`, { schema: routeDoc("Model configuration (Triton's ModelConfig JSON)", { response: { type: 'object' } }), config: { apiGroup: 'model-config' } }, async (request) =>
      modelConfig(repository, request.params.model, request.params.version),
    );
    scope.get<{ Params: ModelParams }>(`${path}/stats`, { schema: routeDoc('Model statistics', { response: STATISTICS_SCHEMA }), config: STATISTICS }, async (request) =>
      modelStatistics(recorder, repository, request.params.model, request.params.version),
    );
  }
}
