import { createError } from '../errors/index.js';
import type { TextTask } from './model-folder.js';
import type { TextModel } from './text-model.js';

/** What an operation needs of a model, for picking one: a task, or 'any' (tokenize, decode, info). */
export type TextNeed = TextTask | 'any';

/**
 * The text models a server serves, as the text protocols look them up. TEI serves one model and
 * its routes name none; OpenAI, Cohere and vLLM requests carry `model`. A request that names no
 * model gets the only one able to serve it.
 */
export class TextModelSet {
  constructor(private readonly models: readonly TextModel[]) {}

  all(): readonly TextModel[] {
    return this.models;
  }

  /** Throws SF_ERR_TEXT_MODEL_UNKNOWN for a name not served, SF_ERR_TEXT_MODEL_AMBIGUOUS when several fit and none is named. */
  pick(need: TextNeed, name?: string): TextModel {
    const served = this.models.map((m) => m.info.name).join(', ') || 'none';
    if (name !== undefined && name !== '') {
      const named = this.models.find((m) => m.info.name === name);
      if (!named) throw createError('SF_ERR_TEXT_MODEL_UNKNOWN', name, served);
      return named;
    }
    const fitting = this.models.filter((m) => need === 'any' || m.info.task === need);
    if (fitting.length === 1) return fitting[0];
    // With no model for the task, the only model there is answers, so its task error names what it is.
    if (fitting.length === 0 && this.models.length === 1) return this.models[0];
    if (fitting.length === 0) throw createError('SF_ERR_TEXT_MODEL_UNKNOWN', `(any ${need} model)`, served);
    throw createError('SF_ERR_TEXT_MODEL_AMBIGUOUS', need === 'any' ? 'serve this request' : `serve the task '${need}'`, fitting.map((m) => m.info.name).join(', '));
  }
}
