import type { Registry } from 'prom-client';
import { createError } from '../errors/index.js';
import type { DecoratedModel } from '../inference/decorated-model.js';
import type { VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { loadClassGenerator } from './class-generator.js';
import { loadGeneratorFolder, type GeneratorServeOptions, type LoadedGenerator } from './folder-generator.js';
import { GenerationMetrics } from './generation-metrics.js';
import { loadGeneratorGguf } from './gguf/gguf-generator.js';
import type { ServedGenerator } from './text-generator.js';
import type { TokenizerFileVocabulary } from '../wire/decoder-step-call.js';

export interface ServerGeneratorsOptions {
  /** Generative model folders (decoder exports) served with no code. */
  readonly folders: readonly string[];
  /** `.gguf` files served on llama.cpp (node-llama-cpp). */
  readonly ggufFiles?: readonly string[];
  readonly options: GeneratorServeOptions;
  /** How the folders' decoders are built and served, as repository models are. */
  readonly builder: VersionBuilderContext;
  readonly registry: Registry;
  /** The server's @Model classes; those with @GenerativeModel become generators over their step hook. */
  readonly decorated?: readonly DecoratedModel[];
  /** Where @GenerativeModel folders are resolved: the folder of the models' module. */
  readonly modelDir?: string;
}

/**
 * The generative models one server serves, one per folder: what the OpenAI / vLLM and KServe
 * generate routes pick from (`served`), their vLLM metrics, and their decoders' engines, which
 * start and stop with the server.
 */
export class ServerGenerators {
  private constructor(
    private readonly loaded: readonly LoadedGenerator[],
    /** The @GenerativeModel classes, whose names their generate views take on /v2. */
    readonly classNames: ReadonlySet<string> = new Set(),
  ) {}

  static readonly none = new ServerGenerators([]);

  /** Throws SF_ERR_GENERATIVE_FOLDER_INVALID for a folder that is not a decoder export (the catalogue refuses a name taken twice). */
  static async load(opts: ServerGeneratorsOptions): Promise<ServerGenerators> {
    const { options } = opts;
    const folders = [...opts.folders, ...(opts.ggufFiles ?? [])];
    const ggufFiles = new Set(opts.ggufFiles);
    const classes = (opts.decorated ?? []).filter((m) => m.runtime.definition.generative);
    if (folders.length === 0 && classes.length === 0) return ServerGenerators.none;
    if (options.servedModelName !== undefined && folders.length > 1) throw createError('SF_ERR_GENERATIVE_FOLDER_INVALID', folders.join(', '), '--served-model-name names one model; several folders are served under their own names');
    const metrics = new GenerationMetrics(opts.registry);
    const loaded: LoadedGenerator[] = [];
    const classNames = new Set(classes.map((m) => m.info.name));
    for (const model of classes) loaded.push(await loadClassGenerator(model, opts.modelDir ?? process.cwd(), options, metrics));
    for (const dir of folders) loaded.push(ggufFiles.has(dir) ? await loadGeneratorGguf(dir, options, opts.builder, metrics) : await loadGeneratorFolder(dir, options, opts.builder, metrics));
    return new ServerGenerators(loaded, classNames);
  }

  /** What the instances of @GenerativeModel class `name` read as their grammar vocabulary; undefined for any other model. */
  classVocabulary(name: string): TokenizerFileVocabulary | undefined {
    return this.loaded.find((l) => l.classVocabulary && l.generator.name === name)?.classVocabulary;
  }

  get served(): readonly ServedGenerator[] {
    return this.loaded.map((l) => l.served);
  }

  /** Starts every decoder's instance. */
  async start(): Promise<void> {
    await Promise.all(this.loaded.map((l) => l.start()));
  }

  /** Stops the decoders once their queued and running generations are done. */
  async stop(): Promise<void> {
    await Promise.allSettled(this.loaded.map((l) => l.stop()));
  }

  /** Why a generator cannot serve now, or undefined. */
  notReady(): string | undefined {
    const down = this.loaded.find((l) => !l.generator.ready());
    return down && `generative model '${down.generator.name}' is not ready`;
  }
}
