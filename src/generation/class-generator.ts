import { createError } from '../errors/index.js';
import type { DecoratedModel } from '../inference/decorated-model.js';
import { pathInside } from '../model-repository/repository-scan.js';
import { generatorLimits, grammarVocabulary, scheduleOn, servedFromFolder, type GeneratorServeOptions, type LoadedGenerator } from './folder-generator.js';
import type { GenerationMetrics } from './generation-metrics.js';
import { readGenerativeConfig } from './generative-folder.js';

/**
 * A @GenerativeModel class as a generator: its folder (config.json, tokenizer.json, the chat
 * template, generation_config.json) read from beside its module, an IterationScheduler registered
 * on the class's own engine, whose instances run the class's step hook (instance/model-host.ts) and
 * sample there as a decoder folder's instance does, structured outputs included: the class's
 * instances get the folder's tokenizer.json as their grammar vocabulary (`classVocabulary`, which
 * the server hands to the class's instance factory). Served under the @Model's name; it starts,
 * drains and stops with the class's runtime, as a @TextModel class does.
 */
export async function loadClassGenerator(model: DecoratedModel, modelDir: string, options: GeneratorServeOptions, metrics: GenerationMetrics): Promise<LoadedGenerator> {
  const def = model.runtime.definition;
  const declared = def.generative!;
  const dir = pathInside(modelDir, declared.folder);
  if (dir === undefined) throw createError('SF_ERR_GENERATIVE_MODEL_INVALID', def.className, `folder '${declared.folder}' is not inside the model's folder ${modelDir}`);
  const folder = readGenerativeConfig(dir);
  const own = { maxModelLen: declared.maxModelLen, maxNumSeqs: declared.maxNumSeqs, maxNumBatchedTokens: declared.maxNumBatchedTokens };
  const flags: GeneratorServeOptions = { ...options, ...Object.fromEntries(Object.entries(own).filter(([, v]) => v !== undefined)) };
  // A cached prefix is reused only when the class can copy one sequence's cache into another.
  const prefixCaching = typeof (def.target.prototype as { copyPrefix?: unknown }).copyPrefix === 'function';
  const { limits, maxModelLen } = generatorLimits(folder, flags, { kvBytesPerToken: folder.kvBytesPerToken, kvCacheTokens: declared.kvCacheTokens, prefixCaching });
  const generator = scheduleOn(model.runtime.engine, {
    name: def.name, limits, maxModelLen, vocabSize: folder.vocabSize, eosTokenIds: folder.eosTokenIds, defaults: folder.defaults, metrics,
  }, () => model.ready());
  const nothing = (): Promise<void> => Promise.resolve();
  // Masks as wide as the logits the scheduler samples from: config.json's vocab_size.
  const classVocabulary = grammarVocabulary(folder, folder.vocabSize);
  return { served: { ...(await servedFromFolder(folder, generator)), version: def.version }, generator, classVocabulary, start: nothing, stop: nothing };
}
