import type { FastifyInstance } from 'fastify';
import type { ModelRepository } from '../inference/inference-model.js';
import type { TraceSettings } from '../tracing/trace-settings.js';
import { readBody } from './kserve-repository-routes.js';
import { restrictedGroupErrors, routeDoc, type Schema } from './kserve-openapi.js';

/** Changing what is traced is Triton's restricted `trace` group (restricted-apis.ts). */
const GROUP = { apiGroup: 'trace' } as const;
const ERRORS = restrictedGroupErrors(GROUP.apiGroup);

const SETTINGS_SCHEMA: Schema = {
  type: 'object',
  description: "Triton's trace settings (docs/tracing.md): trace_level, trace_rate, trace_count, log_frequency, trace_file, trace_mode.",
  additionalProperties: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] },
};
const REQUEST_SCHEMA: Schema = {
  type: 'object',
  description: 'The settings to change; null puts one back to the global (a model) or default value.',
  additionalProperties: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }] },
};

/**
 * Triton's trace extension over HTTP (Triton's docs/protocol/extension_trace.md): the global
 * settings at /v2/trace/setting, a model's at /v2/models/{model}/trace/setting (TraceSettings).
 */
export function registerTraceRoutes(scope: FastifyInstance, opts: { readonly repository: ModelRepository; readonly traceSettings: TraceSettings }): void {
  const { traceSettings } = opts;
  const known = (model: string | undefined): string | undefined => {
    // Throws Triton's unknown-model answer for a model it does not serve.
    if (model !== undefined && opts.repository.models(model).length === 0) opts.repository.get(model);
    return model;
  };
  const get = routeDoc('Trace settings', { response: SETTINGS_SCHEMA, errors: ERRORS });
  const post = routeDoc('Change trace settings', { body: REQUEST_SCHEMA, response: SETTINGS_SCHEMA, errors: ERRORS });
  scope.get('/trace/setting', { schema: get, config: GROUP }, async () => traceSettings.get());
  scope.post('/trace/setting', { schema: post, config: GROUP }, async (request) => traceSettings.update(undefined, readBody(request)));
  scope.get<{ Params: { model: string } }>('/models/:model/trace/setting', { schema: get, config: GROUP }, async (request) => traceSettings.get(known(request.params.model)));
  scope.post<{ Params: { model: string } }>('/models/:model/trace/setting', { schema: post, config: GROUP }, async (request) =>
    traceSettings.update(known(request.params.model), readBody(request)),
  );
}
