import type { FastifyInstance, FastifySchema } from 'fastify';
import type { ServedGenerator } from '../../generation/text-generator.js';
import type { TextEngine } from '../../text/text-engine.js';
import { pickGenerator } from './generation-choices.js';
import { errorResponses } from './openai-errors.js';

const MODEL_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    object: { type: 'string' },
    created: { type: 'integer' },
    owned_by: { type: 'string' },
    max_model_len: { type: 'integer', description: 'Generative models only: the context length (vLLM’s ModelCard)' },
  },
};

/** What /v1/models lists: the text (embedding, classification...) models and the generators. */
export interface ServedModels {
  readonly text: () => readonly TextEngine[];
  /** A text model by name; throws the text routes' 404 when none. */
  readonly pickText: (name: string) => TextEngine;
  readonly generators: readonly ServedGenerator[];
}

/**
 * OpenAI's Model object; serve-fn knows no creation date for a model, so `created` is when the routes
 * started. A generator's card is vLLM's ModelCard (vllm/entrypoints/openai/engine/protocol.py): `root`,
 * `parent`, `max_model_len` and `permission` beside OpenAI's fields.
 */
function textCard(model: TextEngine, created: number) {
  return { id: model.info.name, object: 'model' as const, created, owned_by: 'serve-fn' };
}

function generatorCard(served: ServedGenerator, created: number) {
  const { name, maxModelLen } = served.generator;
  return { id: name, object: 'model' as const, created, owned_by: 'serve-fn', root: name, parent: null, max_model_len: maxModelLen, permission: [] };
}

/** GET /v1/models and /v1/models/{model} (https://platform.openai.com/docs/api-reference/models), registered once for every served kind. */
export function registerModelRoutes(app: FastifyInstance, models: ServedModels, tag: string): void {
  const created = Math.floor(Date.now() / 1000);
  const doc = (summary: string, response: object): FastifySchema => ({ summary, tags: [tag], response: { 200: { description: 'Successful Response', ...response }, ...errorResponses('openai') } });
  app.get('/v1/models', { schema: doc('List models (OpenAI)', { type: 'object', properties: { object: { type: 'string' }, data: { type: 'array', items: MODEL_SCHEMA } } }) }, async () => ({
    object: 'list' as const,
    data: [...models.text().map((model) => textCard(model, created)), ...models.generators.map((served) => generatorCard(served, created))],
  }));
  app.get<{ Params: { model: string } }>('/v1/models/:model', { schema: doc('Retrieve a model (OpenAI)', MODEL_SCHEMA) }, async (request) => {
    const name = request.params.model;
    if (models.generators.some((served) => served.generator.name === name)) return generatorCard(pickGenerator(models.generators, name), created);
    return textCard(models.pickText(name), created);
  });
}
