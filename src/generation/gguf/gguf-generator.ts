import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createError } from '../../errors/index.js';
import type { VersionBuilderContext } from '../../model-repository/model-version-builder.js';
import type { GgufDecoderPlan } from '../../wire/decoder-step-call.js';
import { DEFAULT_GENERATOR_LIMITS, scheduleOnEngine, type GeneratorServeOptions, type LoadedGenerator } from '../folder-generator.js';
import type { GenerationMetrics } from '../generation-metrics.js';
import type { StructuredOutput } from '../text-generator.js';
import { BLOCK_SIZE } from '../kv-blocks.js';
import { StructuredOutputChecker } from '../../instance/structured-output-checker.js';
import { ggufGeneratorMetadata } from '../../instance/gguf-runtime.js';
import { importNodeLlamaCpp, sharedLlama } from '../../instance/node-llama-cpp-loader.js';
import { ggufChatTemplate, ggufTokenizer } from './gguf-model-text.js';

/**
 * A `.gguf` file served as a generator, as llama-server serves one: its weights on llama.cpp in the
 * generator's worker instance (createGgufRuntime, a context sequence per scheduler sequence), under
 * the same IterationScheduler, metrics and routes as a decoder folder. The HTTP thread loads the
 * file with node-llama-cpp's `vocabOnly` (llama.cpp's `vocab_only`: the metadata and vocabulary,
 * no tensors) for the name, context, end-of-generation ids, tokenizer and chat template.
 */
export async function loadGeneratorGguf(file: string, options: GeneratorServeOptions, builder: VersionBuilderContext, metrics: GenerationMetrics): Promise<LoadedGenerator> {
  const lib = await importNodeLlamaCpp(file);
  let vocab: Awaited<ReturnType<Awaited<ReturnType<typeof sharedLlama>>['loadModel']>>;
  try {
    vocab = await (await sharedLlama(lib, false)).loadModel({ modelPath: file, vocabOnly: true });
  } catch (err) {
    throw createError('SF_ERR_GGUF_INVALID', file, (err as Error).message, { cause: err });
  }
  const metadata = ggufGeneratorMetadata(file, vocab, options.maxModelLen);
  const name = options.servedModelName ?? metadata.name;
  const maxNumSeqs = options.maxNumSeqs ?? DEFAULT_GENERATOR_LIMITS.maxNumSeqs;
  const maxNumBatchedTokens = options.maxNumBatchedTokens ?? DEFAULT_GENERATOR_LIMITS.maxNumBatchedTokens;
  const plan: GgufDecoderPlan = { kind: 'decoder', runtime: 'gguf', file, maxNumSeqs, maxModelLen: metadata.maxModelLen, maxNumBatchedTokens };
  const { generator, start, stop } = scheduleOnEngine({
    name, plan, moduleUrl: pathToFileURL(file).href, modelDir: dirname(file), maxModelLen: metadata.maxModelLen,
    limits: {
      maxNumSeqs, maxNumBatchedTokens,
      // llama.cpp's context holds max_model_len tokens for each of its max_num_seqs sequences: the scheduler's blocks say the same.
      kvBlocks: maxNumSeqs * Math.ceil(metadata.maxModelLen / BLOCK_SIZE),
      // The GGUF runtime has no copyPrefix: a sequence's cache is its own llama.cpp context sequence.
      prefixCaching: false,
    },
    vocabSize: metadata.vocabSize, eosTokenIds: metadata.eosTokenIds, defaults: {}, builder, metrics,
  });
  const chatTemplate = ggufChatTemplate(vocab);
  // The HTTP thread only checks a spec; the instance compiles it over the GGUF's tokens and masks (GgufRuntime.constraintVocabulary).
  const checker = new StructuredOutputChecker();
  const structuredOutputs = async (output: StructuredOutput): Promise<void> => void (await checker.ebnf(output));
  return {
    served: { generator, tokenizer: ggufTokenizer(vocab, metadata.vocabSize), structuredOutputs, ...(chatTemplate ? { chatTemplate } : {}) },
    generator,
    start,
    async stop() {
      await stop();
      await vocab.dispose();
    },
  };
}
