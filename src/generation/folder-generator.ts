import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import type { ModelContextData } from '../definition/model-context.js';
import { createError } from '../errors/index.js';
import { InstanceEngine } from '../engine/instance-engine.js';
import { WorkerInstance } from '../engine/worker-instance.js';
import { decoderLayout } from '../instance/onnx-decoder-runtime.js';
import { readModelFileMetadata, type VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { TextTokenizer } from '../tokenizer/tokenizer.js';
import type { DecoderPlan, TokenizerFileVocabulary } from '../wire/decoder-step-call.js';
import { EngineStepTarget } from '../engine/step-target.js';
import type { GenerationMetrics } from './generation-metrics.js';
import { readGenerativeFolder, type GenerativeConfig } from './generative-folder.js';
import { IterationScheduler, type IterationLimits } from './iteration-scheduler.js';
import { BLOCK_SIZE } from './kv-blocks.js';
import { StructuredOutputChecker } from '../instance/structured-output-checker.js';
import type { Generation, GenerationRequest, PromptTokenizer, SamplingParams, ServedGenerator, StructuredOutput, TextGenerator } from './text-generator.js';

/** The server-wide generation flags, named as vLLM's (`serve-fn start <folder> --max-num-seqs 16 ...`). */
export interface GeneratorServeOptions {
  /** --served-model-name: the name clients use; only with one folder. */
  readonly servedModelName?: string;
  readonly maxNumSeqs?: number;
  readonly maxNumBatchedTokens?: number;
  /** --max-model-len: the context, at most max_position_embeddings. */
  readonly maxModelLen?: number;
  /** --kv-cache-space: GiB of KV cache per instance (vLLM's VLLM_CPU_KVCACHE_SPACE). */
  readonly kvCacheSpaceGiB?: number;
}

/**
 * Defaults for a CPU server (measured in bench/generate, docs/BENCHMARKS.md): vLLM's GPU defaults
 * (256 sequences, 2048 tokens) are for accelerators; on a few CPU cores aggregate throughput stops
 * growing well before 16 sequences, and a 512-token budget keeps a decode step's latency in check.
 */
export const DEFAULT_GENERATOR_LIMITS = { maxNumSeqs: 16, maxNumBatchedTokens: 512, kvCacheSpaceGiB: 4 } as const;

/**
 * ONNX Runtime options of a decoder folder's session: every core, and pool threads that sleep
 * between runs rather than spin, because the server's HTTP thread needs a core between steps (on a
 * loaded 2-core machine spinning cost the served path about a third of its CPU per token:
 * docs/BENCHMARKS.md, issue 25).
 */
export const generatorSessionOptions = (): Readonly<Record<string, unknown>> => ({ intraOpNumThreads: availableParallelism(), allowSpinning: false });

/** The tokenizer the protocols use, over the folder's tokenizer.json (special tokens in text parsed as HF tokenizers parse them). */
export class FolderPromptTokenizer implements PromptTokenizer {
  constructor(private readonly tokenizer: TextTokenizer) {}

  async encode(text: string, addSpecialTokens: boolean): Promise<number[]> {
    return Array.from((await this.tokenizer.encode(text, { addSpecialTokens })).ids);
  }

  decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string> {
    return this.tokenizer.decode(ids, skipSpecialTokens);
  }

  tokenText(id: number): string | undefined {
    return this.tokenizer.idToToken(id);
  }
}

/** A TextGenerator whose requests an IterationScheduler runs on an engine's instances. */
export class ScheduledGenerator implements TextGenerator {
  constructor(
    readonly name: string,
    readonly maxModelLen: number,
    readonly vocabSize: number,
    readonly eosTokenIds: readonly number[],
    readonly defaults: Partial<SamplingParams>,
    readonly engine: InstanceEngine,
    readonly scheduler: IterationScheduler,
    readonly ready: () => boolean,
  ) {}

  generate(request: GenerationRequest): Generation {
    const prompt = request.promptTokenIds.length;
    if (prompt === 0) throw createError('SF_ERR_TEXT_EMPTY', 'the prompt');
    if (prompt + request.sampling.maxTokens > this.maxModelLen) throw createError('SF_ERR_GENERATION_CONTEXT_EXCEEDED', this.maxModelLen, request.sampling.maxTokens, prompt, prompt + request.sampling.maxTokens);
    const sequence = this.scheduler.sequence(request);
    // Counted as one request in the nv_* statistics; the protocol reads its end from the Generation.
    this.engine.submit(this.scheduler, sequence, {}).catch(() => undefined);
    return sequence;
  }
}

export interface LoadedGenerator {
  readonly served: ServedGenerator;
  readonly generator: ScheduledGenerator;
  /** A @GenerativeModel class's: what its instances' grammar engine reads (a folder's decoder plan carries its own). */
  readonly classVocabulary?: TokenizerFileVocabulary;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** A no-code generator: a decoder export folder, its tokenizer loaded here and its decoder on an instance of its own. */
export async function loadGeneratorFolder(dir: string, options: GeneratorServeOptions, builder: VersionBuilderContext, metrics: GenerationMetrics): Promise<LoadedGenerator> {
  const folder = readGenerativeFolder(dir);
  const name = options.servedModelName ?? folder.name;
  const { inputs, outputs } = await readModelFileMetadata(folder.modelFile, { kind: 'cpu', id: 0 }, true);
  const layout = decoderLayout(name, inputs, outputs, folder.vocabSize);
  const kvBytesPerToken = layout.layers * 2 * layout.kvHeads * layout.headDim * (layout.kvType === 'FP32' ? 4 : 2);
  // The ONNX runtime copies a cached prefix's KV into the new sequence (OnnxDecoderRuntime.copyPrefix).
  const { limits, maxModelLen } = generatorLimits(folder, options, { kvBytesPerToken, prefixCaching: true });
  const plan: DecoderPlan = {
    kind: 'decoder', file: folder.modelFile, sessionOptions: generatorSessionOptions(), vocabSize: folder.vocabSize,
    grammarVocabulary: grammarVocabulary(folder, layout.vocabSize),
  };
  const { generator, start, stop } = scheduleOnEngine({
    name, plan, moduleUrl: pathToFileURL(folder.modelFile).href, modelDir: folder.dir, limits, maxModelLen, vocabSize: layout.vocabSize,
    eosTokenIds: folder.eosTokenIds, defaults: folder.defaults, builder, metrics,
  });
  return { served: await servedFromFolder(folder, generator), generator, start, stop };
}

/**
 * What the instance's grammar engine reads: the same tokenizer.json the HTTP thread tokenizes with,
 * every end-of-sequence id as a stop token, masks as wide as the logits (`vocabSize`, the padded vocabulary).
 */
export function grammarVocabulary(folder: GenerativeConfig, vocabSize: number): TokenizerFileVocabulary {
  return { tokenizerFile: folder.tokenizerFile, vocabSize, stopTokenIds: folder.eosTokenIds };
}

/** How the scheduler of a folder's model is bounded: the server's flags (and a class's own), and the KV cache they give. */
export interface KvCacheSize {
  /** Bytes one token's KV takes in the runtime, which --kv-cache-space divides. */
  readonly kvBytesPerToken: number;
  /** Tokens the cache holds per instance, when the model says so itself (a @GenerativeModel's kvCacheTokens). */
  readonly kvCacheTokens?: number;
  readonly prefixCaching: boolean;
}

/** The iteration limits and the context of a generator: the server's flags over config.json's, refused where they cannot hold. */
export function generatorLimits(folder: GenerativeConfig, options: GeneratorServeOptions, kv: KvCacheSize): { limits: IterationLimits; maxModelLen: number } {
  const kvBytes = (options.kvCacheSpaceGiB ?? DEFAULT_GENERATOR_LIMITS.kvCacheSpaceGiB) * 2 ** 30;
  const kvBlocks = kv.kvCacheTokens !== undefined ? Math.floor(kv.kvCacheTokens / BLOCK_SIZE) : Math.floor(kvBytes / (BLOCK_SIZE * kv.kvBytesPerToken));
  const limits: IterationLimits = {
    maxNumSeqs: options.maxNumSeqs ?? DEFAULT_GENERATOR_LIMITS.maxNumSeqs,
    maxNumBatchedTokens: options.maxNumBatchedTokens ?? DEFAULT_GENERATOR_LIMITS.maxNumBatchedTokens,
    kvBlocks,
    prefixCaching: kv.prefixCaching,
  };
  if (options.maxModelLen !== undefined && options.maxModelLen > folder.maxPositionEmbeddings) {
    throw createError('SF_ERR_GENERATIVE_FOLDER_INVALID', folder.dir, `--max-model-len ${options.maxModelLen} is past config.json's max_position_embeddings ${folder.maxPositionEmbeddings}`);
  }
  // As vLLM refuses a context its KV cache cannot hold for one sequence; the default context shrinks to it instead.
  const maxModelLen = Math.min(options.maxModelLen ?? folder.maxPositionEmbeddings, kvBlocks * BLOCK_SIZE);
  if (options.maxModelLen !== undefined && maxModelLen < options.maxModelLen) {
    throw createError('SF_ERR_GENERATIVE_FOLDER_INVALID', folder.dir, `--max-model-len ${options.maxModelLen} needs more KV cache than --kv-cache-space gives (${maxModelLen} tokens)`);
  }
  if (maxModelLen < 1) throw createError('SF_ERR_GENERATIVE_FOLDER_INVALID', folder.dir, '--kv-cache-space holds no KV block');
  return { limits, maxModelLen };
}

/**
 * What the protocols serve of a folder's model, whatever runs its weights (its decoder export or a
 * @GenerativeModel class): its tokenizer.json, chat template and the check of a structured-output
 * spec, whose grammar the instance compiles over the same tokenizer.json (grammarVocabulary).
 */
export async function servedFromFolder(folder: GenerativeConfig, generator: ScheduledGenerator): Promise<ServedGenerator> {
  const tokenizer = new FolderPromptTokenizer(await TextTokenizer.fromFile(folder.tokenizerFile));
  // The HTTP thread only checks a spec (no vocabulary, no masks); the instance compiles and masks.
  const checker = new StructuredOutputChecker();
  const structuredOutputs = async (output: StructuredOutput): Promise<void> => void (await checker.ebnf(output));
  return { generator, tokenizer, structuredOutputs, ...(folder.chatTemplate ? { chatTemplate: folder.chatTemplate } : {}) };
}

/** An IterationScheduler registered on `engine` (a decoder's own, or a @GenerativeModel class's), and the generator the protocols call. */
export function scheduleOn(engine: InstanceEngine, spec: Omit<EngineGeneratorSpec, 'plan' | 'moduleUrl' | 'modelDir' | 'builder'>, ready: () => boolean): ScheduledGenerator {
  const { name, limits, maxModelLen } = spec;
  const model = { eosTokenIds: spec.eosTokenIds, maxModelLen };
  let scheduler!: IterationScheduler;
  const gauges = { get pendingCount() { return scheduler.pendingCount; }, get inflightCount() { return scheduler.inflightCount; }, get kvUsage() { return scheduler.kvUsage; } };
  scheduler = engine.register(new IterationScheduler(name, limits, model, new EngineStepTarget(engine), engine.clock, spec.metrics.eventsFor(name, gauges)));
  return new ScheduledGenerator(name, maxModelLen, spec.vocabSize, spec.eosTokenIds, spec.defaults, engine, scheduler, ready);
}

export interface EngineGeneratorSpec {
  readonly name: string;
  readonly plan: DecoderPlan;
  /** The module URL the worker is booted with (the decoder file itself: a decoder plan names no class). */
  readonly moduleUrl: string;
  readonly modelDir: string;
  readonly limits: IterationLimits;
  readonly maxModelLen: number;
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  readonly defaults: Partial<SamplingParams>;
  readonly builder: VersionBuilderContext;
  readonly metrics: GenerationMetrics;
}

/** A generator whose decoder (ONNX or GGUF) runs on one worker instance of its own engine, stepped by an IterationScheduler. */
export function scheduleOnEngine(spec: EngineGeneratorSpec): Omit<LoadedGenerator, 'served'> {
  const { name, plan, builder } = spec;
  const context: ModelContextData = {
    modelName: name, modelVersion: '1', instanceName: `${name}_0`, instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: spec.modelDir, config: { name },
  };
  const engine = new InstanceEngine({
    name, version: '1', instanceCount: 1, recorder: builder.recorder, log: builder.log, restartPolicy: builder.restartPolicy,
    factory: (index, events) => new WorkerInstance(index, spec.moduleUrl, context, events, builder.infer, plan, builder.logger),
  });
  let started = false;
  const generator = scheduleOn(engine, spec, () => started && engine.available);
  return {
    generator,
    async start() {
      await engine.start();
      started = true;
    },
    async stop() {
      started = false;
      await engine.drain();
      await engine.stop();
    },
  };
}
