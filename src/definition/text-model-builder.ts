import { createError } from '../errors/index.js';
import { POOLING_MODES, TEXT_TASKS, type TensorDeclaration, type TensorsRecord, type TextModelDeclaration, type TextModelRecord } from '../metadata/records.js';
import type { ModelClass } from './model-definition.js';

const KNOWN: ReadonlySet<string> = new Set([
  'task', 'folder', 'tokenizer', 'pooling', 'maxInputLength', 'prompts', 'defaultPromptName', 'labels', 'pooledOutput',
  'maxBatchTokens', 'maxBatchRequests', 'maxClientBatchSize', 'maxConcurrentRequests', 'autoTruncate', 'batchByLength',
]);

/** The token inputs a transformer export takes, [rows, length]; token_type_ids and position_ids only for models that use them. */
const TOKEN_INPUTS: readonly TensorDeclaration[] = [
  { name: 'input_ids', datatype: 'INT64', dims: [-1, -1] },
  { name: 'attention_mask', datatype: 'INT64', dims: [-1, -1] },
  { name: 'token_type_ids', datatype: 'INT64', dims: [-1, -1], optional: true },
  { name: 'position_ids', datatype: 'INT64', dims: [-1, -1], optional: true },
];

/**
 * Checks a class's @TextModel record; paths are resolved (inside the module's folder) when the
 * server starts. Misspelt options fail loudly, as @Batch's do.
 */
export function buildTextModel(target: ModelClass, record: TextModelRecord): TextModelDeclaration {
  const invalid = (why: string) => createError('SF_ERR_TEXT_MODEL_INVALID', target.name, why);
  const options = record.options;
  for (const key of Object.keys(options)) if (!KNOWN.has(key)) throw invalid(`option '${key}' is not known (known: ${[...KNOWN].join(', ')})`);
  if (!(TEXT_TASKS as readonly string[]).includes(options.task)) throw invalid(`task must be one of ${TEXT_TASKS.join(', ')} (got ${String(options.task)})`);
  if (options.pooling !== undefined && !(POOLING_MODES as readonly string[]).includes(options.pooling)) throw invalid(`pooling must be one of ${POOLING_MODES.join(', ')} (got ${String(options.pooling)})`);
  if (options.folder === undefined && options.tokenizer === undefined) throw invalid('needs a tokenizer: give `folder` (a sentence-transformers export) or `tokenizer` (a tokenizer.json)');
  for (const key of ['maxInputLength', 'maxBatchTokens', 'maxBatchRequests', 'maxClientBatchSize', 'maxConcurrentRequests'] as const) {
    const value = options[key];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) throw invalid(`${key} must be an integer >= 1 (got ${String(value)})`);
  }
  return Object.freeze({ ...options });
}

/** The tensor interface @TextModel implies when the class declares no @Tensors of its own: tokens in, by task what comes out. */
export function impliedTextTensors(declaration: TextModelDeclaration): TensorsRecord {
  const output: TensorDeclaration = declaration.task === 'embed'
    ? declaration.pooledOutput ? { name: 'sentence_embedding', datatype: 'FP32', dims: [-1, -1] } : { name: 'last_hidden_state', datatype: 'FP32', dims: [-1, -1, -1] }
    : declaration.task === 'sparse' ? { name: 'logits', datatype: 'FP32', dims: [-1, -1, -1] } : { name: 'logits', datatype: 'FP32', dims: [-1, -1] };
  return { options: { inputs: TOKEN_INPUTS, outputs: [output], maxBatchSize: 0 } };
}
