import { ServerDiffusionModels, type DiffusionServeOptions } from '../diffusion/server-diffusion-models.js';
import type { GeneratorServeOptions } from '../generation/folder-generator.js';
import { ServerGenerators } from '../generation/server-generators.js';
import { ServerSpeechModels, type SpeechServeOptions } from '../speech/server-speech-models.js';
import { ServerTextModels, type ServerTextModelsOptions } from '../text/server-text-models.js';
import type { TextServeOptions } from '../text/text-model-loader.js';

/** What each no-code model kind's loader (ServerTextModels, ServerGenerators, ...) offers the server's lifecycle. */
interface FolderModelSet {
  start(): Promise<void>;
  /** Stops once queued and running work is done; streams get `drainMs` to finish where the kind holds any. */
  stop(drainMs?: number): Promise<void>;
  /** Why one of its models cannot serve now, or undefined. */
  notReady(): string | undefined;
}

/** The folders and flags of the model kinds served with no code (part of ServeOptions). */
export interface FolderModelsOptions {
  /** Text model folders (sentence-transformers / optimum exports) served with no code. */
  readonly textFolders?: readonly string[];
  /** TEI's flags for every text model: limits, task, pooling, dtype, prompt and served name. */
  readonly text?: TextServeOptions;
  /** Generative model folders (optimum decoder exports) served with no code. */
  readonly generativeFolders?: readonly string[];
  /** `.gguf` files served on llama.cpp, beside the generative folders. */
  readonly ggufFiles?: readonly string[];
  /** vLLM's flags for every generative model: --max-num-seqs, --max-num-batched-tokens, --max-model-len, served name. */
  readonly generation?: GeneratorServeOptions;
  /** FunASR export folders (SenseVoiceSmall, Paraformer, BiCifParaformer) served with no code (docs/speech.md). */
  readonly speechFolders?: readonly string[];
  readonly speech?: SpeechServeOptions;
  /** Diffusers pipeline folders (ONNX exports) served with no code, on the OpenAI Images routes (docs/diffusion.md). */
  readonly diffusionFolders?: readonly string[];
  /** The denoisers' step-level batching limits (`--max-num-seqs`, `--diffusion-admission-wait-ms`) and `--stage-instances`. */
  readonly diffusion?: DiffusionServeOptions;
}

/** What the loaders share: the server's @Model classes (for @TextModel and @GenerativeModel), their module's folder, how versions are built, the registry, the log. */
export type FolderModelsContext = Pick<ServerTextModelsOptions, 'decorated' | 'modelDir' | 'builder' | 'registry' | 'log'>;

/**
 * The model kinds one server serves with no code (text, generative and GGUF, speech, diffusion),
 * each from its own loader; they start, stop and report readiness alike, as one list. Their names
 * are registered with the catalogue, which refuses a name taken twice (ModelCatalogue.of).
 */
export class FolderModels {
  private constructor(
    readonly text: ServerTextModels,
    readonly generators: ServerGenerators,
    readonly speech: ServerSpeechModels,
    readonly diffusion: ServerDiffusionModels,
  ) {}

  static readonly none = new FolderModels(ServerTextModels.none, ServerGenerators.none, ServerSpeechModels.none, ServerDiffusionModels.none);

  /** Reads every folder and builds its models without starting any instance. */
  static async load(options: FolderModelsOptions, context: FolderModelsContext): Promise<FolderModels> {
    const { builder, registry } = context;
    const text = await ServerTextModels.load({
      folders: options.textFolders ?? [], options: options.text ?? {}, decorated: context.decorated, modelDir: context.modelDir, builder, registry, log: context.log,
    });
    const generators = await ServerGenerators.load({
      folders: options.generativeFolders ?? [], ggufFiles: options.ggufFiles ?? [], options: options.generation ?? {}, builder, registry, decorated: context.decorated, modelDir: context.modelDir,
    });
    const speech = await ServerSpeechModels.load(options.speechFolders ?? [], options.speech ?? {}, builder);
    const diffusion = await ServerDiffusionModels.load({ folders: options.diffusionFolders ?? [], limits: options.diffusion, builder, registry });
    return new FolderModels(text, generators, speech, diffusion);
  }

  private get kinds(): readonly FolderModelSet[] {
    return [this.text, this.generators, this.speech, this.diffusion];
  }

  /** Starts every kind; when one fails, the others still settle first, so the caller's stop() finds none half-started. */
  async start(): Promise<void> {
    const started = await Promise.allSettled(this.kinds.map((k) => k.start()));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Stops every kind once its queued and running work is done; streams get `drainMs` where a kind holds any. */
  async stop(drainMs?: number): Promise<void> {
    await Promise.all(this.kinds.map((k) => k.stop(drainMs)));
  }

  /** Why one of the models cannot serve now, or undefined. */
  notReady(): string | undefined {
    return this.kinds.map((k) => k.notReady()).find((reason) => reason !== undefined);
  }
}
