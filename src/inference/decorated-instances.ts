import type { InferOptions, ModelContextData } from '../definition/model-context.js';
import type { ModelDefinition } from '../definition/model-definition.js';
import { InlineInstance } from '../engine/inline-instance.js';
import type { InstanceFactory } from '../engine/model-instance.js';
import { WorkerInstance } from '../engine/worker-instance.js';
import { createError } from '../errors/index.js';
import type { ModelLogger } from '../instance/instance-logger.js';
import type { GeneratorClassPlan, TokenizerFileVocabulary } from '../wire/decoder-step-call.js';

export interface DecoratedInstancesOptions {
  /** URL of the module exporting the model classes; worker-thread instances import it. */
  readonly moduleUrl: string | undefined;
  /** The folder of that module, where the model's relative paths start (ctx.modelDir). */
  readonly modelDir: string;
  /** ctx.infer of every instance: the server's, so a call resolves through its catalogue. */
  readonly infer: (model: string, input: unknown, options: InferOptions, traceparent?: string) => Promise<unknown>;
  readonly logger: ModelLogger;
  /**
   * For a @GenerativeModel class: where its instances' grammar engine reads the vocabulary (the
   * tokenizer.json of the class's folder). Asked when an instance is made, since the class's
   * generator reads its folder after its runtime is built.
   */
  readonly grammarVocabulary?: () => TokenizerFileVocabulary | undefined;
}

/**
 * How a @Model class's instances are made: each in a worker thread that imports the model's
 * module, or in the HTTP thread with `{ inline: true }`. Throws SF_ERR_INSTANCES_INVALID for worker
 * instances without a module to import.
 */
export function decoratedInstanceFactory(def: ModelDefinition, options: DecoratedInstancesOptions): InstanceFactory {
  const { moduleUrl, modelDir, infer, logger } = options;
  if (!def.instances.inline && !moduleUrl) {
    throw createError('SF_ERR_INSTANCES_INVALID', def.className, "run in worker threads, which import the model's module: pass moduleUrl, or use { inline: true }");
  }
  return (index, events) => {
    const context = contextFor(def, index, modelDir);
    const grammarVocabulary = def.generative && options.grammarVocabulary?.();
    const plan: GeneratorClassPlan | undefined = grammarVocabulary && { kind: 'generator-class', grammarVocabulary };
    return def.instances.inline
      ? new InlineInstance(index, def, context, infer, logger, grammarVocabulary)
      : new WorkerInstance(index, moduleUrl!, context, events, infer, plan, logger);
  };
}

function contextFor(def: ModelDefinition, index: number, modelDir: string): ModelContextData {
  const { count, kind, devices } = def.instances;
  return {
    modelName: def.name,
    modelVersion: def.version,
    instanceName: `${def.name}_${index}`,
    instanceIndex: index,
    instanceCount: count,
    deviceKind: kind,
    deviceId: devices[index % devices.length],
    modelDir,
    config: {
      name: def.name,
      version: def.version,
      description: def.description,
      instances: { count, kind, devices: [...devices] },
      endpoints: def.endpoints.map((e) => ({ method: e.httpMethod, path: e.path, batch: e.batch ?? null })),
    },
  };
}
