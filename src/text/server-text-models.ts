import type { Registry } from 'prom-client';
import { createError } from '../errors/index.js';
import type { DecoratedModel } from '../inference/decorated-model.js';
import type { VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { TextInferenceModel } from './text-inference-model.js';
import { TextMetrics } from './text-metrics.js';
import { loadClassTextModel, loadFolderTextModel, type LoadedTextModel, type TextServeOptions } from './text-model-loader.js';
import { TextModelSet } from './text-model-set.js';

/** A text model's parts on instances of their own: its tokenizer, and a folder's forward model (a class's is its runtime's). */
type ServedTextParts = Pick<LoadedTextModel, 'tokenizer'> & Partial<Pick<LoadedTextModel, 'forward'>>;

export interface ServerTextModelsOptions {
  /** Model folders served with no code. */
  readonly folders: readonly string[];
  readonly options: TextServeOptions;
  /** The server's @Model classes; those with @TextModel become text models over their tensor interface. */
  readonly decorated: readonly DecoratedModel[];
  /** Where @TextModel paths are resolved: the folder of the models' module. */
  readonly modelDir: string;
  /** How the folders' forward models are built and served, as repository models are. */
  readonly builder: VersionBuilderContext;
  readonly registry: Registry;
  /** Where failed forward passes are reported. */
  readonly log: (message: string, err: unknown) => void;
}

/**
 * The text models one server serves: one per model folder and one per @TextModel class, what the
 * text protocols pick from (`set`), their KServe v2 views for the catalogue (`views`), and the
 * folders' forward models, which start and stop with the server.
 */
export class ServerTextModels {
  private constructor(
    readonly set: TextModelSet,
    readonly views: readonly TextInferenceModel[],
    /** The @TextModel classes, whose names their text views take on /v2. */
    readonly classNames: ReadonlySet<string>,
    /** What starts and stops with the server: the folders' tokenizers and forward models, and the classes' tokenizers. */
    private readonly served: readonly ServedTextParts[],
  ) {}

  static readonly none = new ServerTextModels(new TextModelSet([]), [], new Set(), []);

  static async load(opts: ServerTextModelsOptions): Promise<ServerTextModels> {
    const { folders, options, decorated } = opts;
    const classes = decorated.filter((m) => m.runtime.definition.text);
    if (folders.length === 0 && classes.length === 0) return ServerTextModels.none;
    if (options.servedModelName !== undefined && folders.length > 1) throw createError('SF_ERR_TEXT_MODEL_FOLDER_INVALID', folders.join(', '), '--served-model-name names one model; several folders are served under their own names');
    const engine = { metrics: new TextMetrics(opts.registry), log: opts.log };
    const fromFolders = [];
    for (const dir of folders) fromFolders.push(await loadFolderTextModel(dir, options, opts.builder, engine));
    const views = fromFolders.map((f) => new TextInferenceModel(f.text, '1'));
    const served: ServedTextParts[] = [...fromFolders];
    for (const model of classes) {
      const def = model.runtime.definition;
      const loaded = await loadClassTextModel(model, opts.modelDir, options, opts.builder, engine);
      views.push(new TextInferenceModel(loaded.text, def.version));
      served.push({ tokenizer: loaded.tokenizer });
    }
    return new ServerTextModels(new TextModelSet(views.map((v) => v.text)), views, new Set(classes.map((m) => m.info.name)), served);
  }

  /** Loads the tokenizers and the folders' forward models (instances, warmup); a @TextModel class's model starts with its runtime. */
  async start(): Promise<void> {
    await Promise.all(this.served.flatMap((f) => [f.tokenizer.start(), f.forward?.start()]));
  }

  /**
   * Stops each folder's tokenizer once the texts queued on it are encoded, then its forward model
   * once the batches those texts joined are done (a @TextModel class's drain with its runtime).
   */
  async stop(): Promise<void> {
    await Promise.allSettled(this.served.map(async (f) => {
      await f.tokenizer.stop().catch(() => undefined);
      await f.forward?.stop();
    }));
  }

  /** Why a text model cannot serve now (its forward model is not ready), or undefined. */
  notReady(): string | undefined {
    const down = this.set.all().find((t) => !t.ready());
    return down && `text model '${down.info.name}' is not ready`;
  }
}
