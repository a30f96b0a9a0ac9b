import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ModelContextData } from '../definition/model-context.js';
import { createError } from '../errors/index.js';
import type { DecoratedModel } from '../inference/decorated-model.js';
import type { TextForwardPlan } from '../wire/tensor-model-plan.js';
import { readModelFileMetadata, type VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { pathInside } from '../model-repository/repository-scan.js';
import { InstanceEngine } from '../engine/instance-engine.js';
import { WorkerInstance } from '../engine/worker-instance.js';
import type { TensorSpec } from '../spec/tensor.js';
import type { TextForward } from './forward-scheduler.js';
import { readTextModelFolder, type TextModelFolder, type TextTask } from './model-folder.js';
import type { PoolingMode } from './pooling.js';
import { DEFAULT_TEXT_LIMITS, TextEngine, type TextLimits, type TextModelOptions, type TextModelSpec } from './text-engine.js';
import { TextTokenizer } from '../tokenizer/tokenizer.js';
import { InstanceTokenizer } from './instance-tokenizer.js';
import { OwnInstances } from './own-instances.js';

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
  /** The folder's tokenizer on an instance of its own, which the server starts and stops. */
  readonly tokenizer: InstanceTokenizer;
  /** The folder's model file on its own instances, which the server starts and stops. */
  readonly forward: FolderForward;
}

/**
 * A text model folder's forward model: one worker-thread instance that pads, runs and pools
 * (instance/text-forward-host.ts), on an engine of its own whose one scheduler is the text model's
 * forward batches; nv_* statistics under the served name. One instance, with ONNX Runtime's
 * intra-op threads on every core, as TEI runs its ORT backend.
 */
export class FolderForward extends OwnInstances implements TextForward {
  /** The folder's model takes as many rows as the token budget lets a batch have. */
  readonly maxRows = 0;

  constructor(
    readonly name: string,
    readonly inputs: readonly TensorSpec[],
    plan: TextForwardPlan,
    context: ModelContextData,
    builder: VersionBuilderContext,
  ) {
    const moduleUrl = pathToFileURL(plan.file).href;
    super(new InstanceEngine({
      name, version: context.modelVersion, instanceCount: context.instanceCount, recorder: builder.recorder, log: builder.log, restartPolicy: builder.restartPolicy,
      factory: (index, events) => new WorkerInstance(index, moduleUrl, context, events, builder.infer, plan, builder.logger),
    }));
  }
}

/** A no-code text model: a sentence-transformers / optimum export folder, its tokenizer and its model file each run on an instance of its own. */
export async function loadFolderTextModel(dir: string, options: TextServeOptions, builder: VersionBuilderContext, engine: TextEngineServices): Promise<LoadedTextModel> {
  const folder = readTextModelFolder(dir, { task: options.task, pooling: options.pooling });
  const name = options.servedModelName ?? folder.name;
  const modelFile = options.dtype === 'float16' ? halfPrecisionFile(folder) : folder.modelFile;
  const limits = { ...DEFAULT_TEXT_LIMITS, ...options.limits };
  const onNpu = extname(modelFile) === '.om';
  const device = { kind: onNpu ? 'npu' : 'cpu', id: 0 } as const;
  const { inputs } = await readModelFileMetadata(modelFile, device, !onNpu);
  const plan: TextForwardPlan = { kind: 'text-forward', file: modelFile, sessionOptions: onNpu ? {} : { intraOpNumThreads: availableParallelism() } };
  const context: ModelContextData = {
    modelName: name, modelVersion: '1', instanceName: `${name}_0`, instanceIndex: 0, instanceCount: 1, deviceKind: device.kind, deviceId: device.id, modelDir: folder.dir, config: { name },
  };
  const forward = new FolderForward(name, inputs, plan, context, builder);
  const tokenizer = new InstanceTokenizer(await TextTokenizer.fromFile(folder.tokenizerFile), folder.tokenizerFile, context, builder);
  const spec = specOf(folder, { name, modelId: folder.dir, defaultPromptName: options.promptName ?? folder.defaultPromptName });
  const text = new TextEngine(spec, tokenizer, forward, { ...engine, limits, computeType: onNpu ? 'npu' : 'cpu', dtype: options.dtype });
  return { text, tokenizer, forward };
}

/**
 * A @TextModel class: its folder or tokenizer read from beside its module and run on an instance of
 * its own, its forward batches a scheduler on the class's own engine, run through its tensor
 * interface (`execute`) by its host.
 */
export async function loadClassTextModel(model: DecoratedModel, modelDir: string, options: TextServeOptions, builder: VersionBuilderContext, engine: TextEngineServices): Promise<{ text: TextEngine; tokenizer: InstanceTokenizer }> {
  const def = model.runtime.definition;
  const declared = def.text!;
  const inside = (path: string, what: string): string => {
    const resolved = pathInside(modelDir, path);
    if (resolved === undefined) throw createError('SF_ERR_TEXT_MODEL_INVALID', def.className, `${what} '${path}' is not inside the model's folder ${modelDir}`);
    return resolved;
  };
  const folder = declared.folder === undefined ? undefined : readTextModelFolder(inside(declared.folder, 'folder'), { task: declared.task, pooling: declared.pooling });
  const tokenizerFile = declared.tokenizer !== undefined ? inside(declared.tokenizer, 'tokenizer') : folder!.tokenizerFile;
  const context: ModelContextData = {
    modelName: def.name, modelVersion: def.version, instanceName: `${def.name}_0`, instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir, config: { name: def.name },
  };
  const tokenizer = new InstanceTokenizer(await TextTokenizer.fromFile(tokenizerFile), tokenizerFile, context, builder);
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
  const forward: TextForward = { engine: model.runtime.engine, inputs: model.info.inputs, maxRows: model.info.maxBatchSize, ready: () => model.ready() };
  return { text: new TextEngine(spec, tokenizer, forward, { ...engine, limits, computeType: def.instances.kind }), tokenizer };
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
