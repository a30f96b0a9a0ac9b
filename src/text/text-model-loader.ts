import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, extname, join } from 'node:path';
import type { ModelDefinition } from '../definition/model-definition.js';
import { createError } from '../errors/index.js';
import type { InferenceModel } from '../inference/inference-model.js';
import type { ServedModel } from '../inference/served-model.js';
import { parseModelConfigJson } from '../model-repository/config-json.js';
import type { ModelSource } from '../model-repository/model-source.js';
import { buildModelVersions, type VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { pathInside } from '../model-repository/repository-scan.js';
import { readTextModelFolder, type TextModelFolder, type TextTask } from './model-folder.js';
import type { PoolingMode } from './pooling.js';
import { DEFAULT_TEXT_LIMITS, TextEngine, type TextLimits, type TextModelOptions, type TextModelSpec } from './text-engine.js';
import { TextTokenizer } from './tokenizer.js';

/** The server-wide text flags, named as TEI's (`serve-fn start <folder> --max-batch-tokens ...`). */
export interface TextServeOptions {
  /** --task: what the folder serves, when its files say otherwise or nothing. */
  readonly task?: TextTask;
  readonly pooling?: PoolingMode;
  readonly limits?: Partial<TextLimits>;
  /** --dtype float16 serves the export's model_fp16.onnx (optimum's name for it) beside model.onnx. */
  readonly dtype?: 'float32' | 'float16';
  /** --prompt-name: the prompt applied to requests that name none (TEI's --default-prompt-name). */
  readonly promptName?: string;
  /** --served-model-name: the name clients use; only with one folder. */
  readonly servedModelName?: string;
  /** --payload-limit: the largest body of the text routes in bytes (TEI's; 2,000,000 unless set), never above the server's bodyLimit. */
  readonly payloadLimit?: number;
}

/** What the server gives every text model: one set of te_* metrics, and its log. */
export type TextEngineServices = Pick<TextModelOptions, 'metrics' | 'log'>;

export interface LoadedTextModel {
  readonly text: TextEngine;
  /** The forward model the server loads and unloads: the folder's ONNX or OM file on its own instances. */
  readonly forward: ServedModel;
}

/**
 * A no-code text model: a sentence-transformers / optimum export folder, its tokenizer loaded here
 * and its model file served as a repository model is (config-only ONNX or OM, worker-thread
 * instances, nv_* statistics under the served name), with no batch scheduler of its own: the
 * TextEngine forms the batches. One instance, with ONNX Runtime's intra-op threads on every core,
 * as TEI runs its ORT backend.
 */
export async function loadFolderTextModel(dir: string, options: TextServeOptions, builder: VersionBuilderContext, engine: TextEngineServices): Promise<LoadedTextModel> {
  const folder = readTextModelFolder(dir, { task: options.task, pooling: options.pooling });
  const name = options.servedModelName ?? folder.name;
  const modelFile = options.dtype === 'float16' ? halfPrecisionFile(folder) : folder.modelFile;
  const limits = { ...DEFAULT_TEXT_LIMITS, ...options.limits };
  const kind = extname(modelFile) === '.om' ? 'npu_om' : 'onnx';
  const { config } = parseModelConfigJson(JSON.stringify({
    name,
    backend: kind === 'onnx' ? 'onnxruntime' : 'npu_om',
    ...(kind === 'onnx' ? { platform: 'onnxruntime_onnx' } : {}),
    // A cap on rows per forward pass, not a scheduler: the TextEngine's batches arrive whole.
    max_batch_size: limits.maxBatchRequests ?? limits.maxBatchTokens,
    instance_group: [{ count: 1, kind: 'KIND_CPU' }],
    parameters: kind === 'onnx' ? { intra_op_thread_count: { string_value: String(availableParallelism()) } } : {},
  }), name);
  const source: ModelSource = { name, dir: folder.dir, config, kind, versions: [{ version: '1', file: modelFile }], warnings: [] };
  const [forward] = await buildModelVersions(source, builder);
  const tokenizer = await TextTokenizer.fromFile(folder.tokenizerFile);
  const spec = specOf(folder, { name, modelId: folder.dir, defaultPromptName: options.promptName ?? folder.defaultPromptName });
  const text = new TextEngine(spec, tokenizer, forward, { ...engine, limits, instanceCount: 1, computeType: kind === 'npu_om' ? 'npu' : 'cpu', dtype: options.dtype });
  return { text, forward };
}

/**
 * A @TextModel class: its folder or tokenizer read from beside its module, and its tensor
 * interface (a DecoratedModel) as the forward model, on the class's own instances.
 */
export async function loadClassTextModel(def: ModelDefinition, forward: InferenceModel, modelDir: string, options: TextServeOptions, engine: TextEngineServices): Promise<TextEngine> {
  const declared = def.text!;
  const inside = (path: string, what: string): string => {
    const resolved = pathInside(modelDir, path);
    if (resolved === undefined) throw createError('SF_ERR_TEXT_MODEL_INVALID', def.className, `${what} '${path}' is not inside the model's folder ${modelDir}`);
    return resolved;
  };
  const folder = declared.folder === undefined ? undefined : readTextModelFolder(inside(declared.folder, 'folder'), { task: declared.task, pooling: declared.pooling });
  const tokenizerFile = declared.tokenizer !== undefined ? inside(declared.tokenizer, 'tokenizer') : folder!.tokenizerFile;
  const tokenizer = await TextTokenizer.fromFile(tokenizerFile);
  const pooling = declared.pooling ?? folder?.pooling ?? (declared.task === 'sparse' ? 'splade' : 'cls');
  const spec: TextModelSpec = {
    name: def.name,
    modelId: def.className,
    task: declared.task,
    pooling,
    maxInputLength: declared.maxInputLength ?? folder?.maxInputLength ?? 512,
    prompts: declared.prompts ?? folder?.prompts ?? {},
    defaultPromptName: declared.defaultPromptName ?? options.promptName ?? folder?.defaultPromptName,
    labels: declared.labels ?? folder?.labels ?? [],
  };
  const own = Object.fromEntries(Object.entries({
    maxBatchTokens: declared.maxBatchTokens, maxBatchRequests: declared.maxBatchRequests, maxClientBatchSize: declared.maxClientBatchSize,
    maxConcurrentRequests: declared.maxConcurrentRequests, autoTruncate: declared.autoTruncate, batchByLength: declared.batchByLength,
  }).filter(([, v]) => v !== undefined));
  const limits = { ...DEFAULT_TEXT_LIMITS, ...options.limits, ...own };
  return new TextEngine(spec, tokenizer, forward, { ...engine, limits, instanceCount: def.instances.count, computeType: def.instances.kind });
}

function specOf(folder: TextModelFolder, names: Pick<TextModelSpec, 'name' | 'modelId' | 'defaultPromptName'>): TextModelSpec {
  const { task, pooling, maxInputLength, prompts, labels, hiddenSize } = folder;
  return { ...names, task, pooling, maxInputLength, prompts, labels, ...(hiddenSize === undefined ? {} : { dimensions: hiddenSize }) };
}

function halfPrecisionFile(folder: TextModelFolder): string {
  const file = join(dirname(folder.modelFile), `${basename(folder.modelFile, '.onnx')}_fp16.onnx`);
  if (!existsSync(file)) throw createError('SF_ERR_TEXT_MODEL_FOLDER_INVALID', folder.dir, `--dtype float16 serves ${file}, which does not exist (optimum writes it with --dtype fp16)`);
  return file;
}
