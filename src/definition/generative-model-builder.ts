import { createError } from '../errors/index.js';
import type { GenerativeModelDeclaration, GenerativeModelRecord } from '../metadata/records.js';
import type { ModelClass } from './model-definition.js';

const KNOWN: ReadonlySet<string> = new Set(['folder', 'maxModelLen', 'maxNumSeqs', 'maxNumBatchedTokens', 'kvCacheTokens']);

/**
 * Checks a class's @GenerativeModel record and its step hook; the folder is resolved (inside the
 * module's folder) and read when the server starts. Misspelt options fail loudly, as @TextModel's do.
 */
export function buildGenerativeModel(target: ModelClass, record: GenerativeModelRecord): GenerativeModelDeclaration {
  const invalid = (why: string) => createError('SF_ERR_GENERATIVE_MODEL_INVALID', target.name, why);
  const options = record.options;
  for (const key of Object.keys(options)) if (!KNOWN.has(key)) throw invalid(`option '${key}' is not known (known: ${[...KNOWN].join(', ')})`);
  if (typeof options.folder !== 'string' || options.folder === '') throw invalid('needs `folder`: the model folder with config.json, tokenizer.json and tokenizer_config.json');
  for (const key of ['maxModelLen', 'maxNumSeqs', 'maxNumBatchedTokens', 'kvCacheTokens'] as const) {
    const value = options[key];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) throw invalid(`${key} must be an integer >= 1 (got ${String(value)})`);
  }
  const prototype = target.prototype as Record<string, unknown>;
  for (const hook of ['step', 'release'] as const) {
    if (typeof prototype[hook] !== 'function') throw invalid(`needs a ${hook}() method (the step hook: step(rows) answers logits, release(sequenceIds) frees caches)`);
  }
  if (prototype.copyPrefix !== undefined && typeof prototype.copyPrefix !== 'function') throw invalid('copyPrefix must be a method');
  return Object.freeze({ ...options });
}
