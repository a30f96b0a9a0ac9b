import type { Registry } from 'prom-client';
import type { ServerModel } from '../inference/model-catalogue.js';
import type { VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { DiffusionMetrics } from './diffusion-metrics.js';
import { DiffusionInferenceModel } from './diffusion-inference-model.js';
import { DiffusionPipeline } from './diffusion-pipeline.js';
import { readDiffusionFolder } from './pipeline-folder.js';
import { DEFAULT_STEP_LIMITS, type StepLimits } from './step-scheduler.js';
import { checkStageInstances, type StageInstances } from './stage-instances.js';
import { createError } from '../errors/index.js';

/** A server's settings for its pipelines: the denoisers' step-scheduler limits and per-stage instance counts. */
export interface DiffusionServeOptions extends Partial<StepLimits> {
  /** `--stage-instances`: instances per stage, over the stage folders' config.pbtxt counts. */
  readonly stageInstances?: StageInstances;
}

export interface ServerDiffusionModelsOptions {
  /** Diffusers pipeline folders served with no code, each under its folder's name. */
  readonly folders: readonly string[];
  /** `--max-num-seqs`, `--diffusion-admission-wait-ms`, `--stage-instances`. */
  readonly limits?: DiffusionServeOptions;
  readonly builder: VersionBuilderContext;
  readonly registry: Registry;
}

/**
 * The diffusion pipelines one server serves (beside ServerTextModels): what the image routes pick
 * from, their stages as /v2 models for the catalogue, started and stopped with the server.
 */
export class ServerDiffusionModels {
  private constructor(readonly pipelines: readonly DiffusionPipeline[]) {}

  static readonly none = new ServerDiffusionModels([]);

  static async load(opts: ServerDiffusionModelsOptions): Promise<ServerDiffusionModels> {
    if (opts.folders.length === 0) return ServerDiffusionModels.none;
    const metrics = new DiffusionMetrics(opts.registry);
    const { stageInstances, ...given } = opts.limits ?? {};
    if (stageInstances) {
      try {
        checkStageInstances(stageInstances);
      } catch (cause) {
        throw createError('SF_ERR_BAD_REQUEST', `stage instances: ${(cause as Error).message}`, { cause });
      }
    }
    const limits = { ...DEFAULT_STEP_LIMITS, ...given };
    const pipelines: DiffusionPipeline[] = [];
    for (const dir of opts.folders) {
      const folder = readDiffusionFolder(dir);
      pipelines.push(await DiffusionPipeline.load(folder, folder.name, opts.builder, limits, metrics, stageInstances));
    }
    return new ServerDiffusionModels(pipelines);
  }

  /** Every pipeline (prompt in, image out) and its stages, as the server's own /v2 models. */
  views(): ServerModel[] {
    return this.pipelines.flatMap((p) => [new DiffusionInferenceModel(p), ...p.stageModels()]);
  }

  async start(): Promise<void> {
    await Promise.all(this.pipelines.map((p) => p.start()));
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.pipelines.map((p) => p.stop()));
  }

  /** Why a pipeline cannot serve now, or undefined. */
  notReady(): string | undefined {
    const down = this.pipelines.find((p) => !p.ready());
    return down && `image model '${down.name}' is not ready`;
  }
}
