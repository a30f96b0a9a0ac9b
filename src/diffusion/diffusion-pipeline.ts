import { randomInt } from 'node:crypto';
import { createError } from '../errors/index.js';
import type { CancelSignal } from '../spec/cancel-signal.js';
import type { RepositoryIndexEntry } from '../inference/inference-model.js';
import type { ServerModel } from '../inference/model-catalogue.js';
import type { TensorModelVersion } from '../inference/tensor-model-version.js';
import type { VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { TextTokenizer } from '../tokenizer/tokenizer.js';
import { now } from '../wire/epoch-time.js';
import { scheduleFor } from './denoise-schedule.js';
import { DenoiseWork } from './denoise-work.js';
import type { DiffusionMetrics } from './diffusion-metrics.js';
import type { DiffusionFolder } from './pipeline-folder.js';
import { DualTextEncoding } from './dual-text-encoding.js';
import { buildPipelineStages, npuStageError, stageList, type PipelineStages } from './pipeline-stages.js';
import { SingleTextEncoding, type PromptEncoder } from './prompt-encoding.js';
import { seededNormal } from './seeded-noise.js';
import type { StageInstances } from './stage-instances.js';
import { StepScheduler, type StepLimits } from './step-scheduler.js';
import { VAE_IMAGE_OUTPUT } from './vae-decoder-instance.js';

/** One image to generate, its fields checked by the protocol. */
export interface ImageRequest {
  readonly prompt: string;
  /**
   * The unconditional branch of classifier-free guidance; when absent, '' encoded as diffusers
   * does, or zeros for an SDXL-style pipeline with force_zeros_for_empty_prompt.
   */
  readonly negativePrompt?: string;
  readonly width: number;
  readonly height: number;
  readonly steps: number;
  readonly guidanceScale: number;
  /** Seeds the initial noise (seeded-noise.ts); a random seed when absent. */
  readonly seed?: number;
  readonly signal?: CancelSignal;
  /** How many partial images to decode on the way (OpenAI's partial_images, 0–3). */
  readonly partialImages?: number;
  readonly onPartial?: (image: DecodedImage, index: number) => void;
  /** After each denoising step, with the steps done. */
  readonly onStep?: (done: number) => void;
}

/** An image as 8-bit RGB rows (height × width × 3). */
export interface DecodedImage {
  readonly width: number;
  readonly height: number;
  readonly rgb: Uint8Array;
}

/**
 * A diffusers pipeline folder served with no code: its tokenizer(s) here, its stages as models
 * on the engine (pipeline-stages.ts), the denoiser's steps batched across requests by a
 * StepScheduler on the denoiser's engine. `generate` runs one image: encode, denoise, decode, as
 * diffusers' pipelines do (pipeline_stable_diffusion_3.py `__call__`).
 */
export class DiffusionPipeline {
  private constructor(
    readonly name: string,
    readonly folder: DiffusionFolder,
    private readonly stages: PipelineStages,
    private readonly prompts: PromptEncoder,
    private readonly steps: StepScheduler,
    private readonly metrics: DiffusionMetrics,
  ) {}

  static async load(folder: DiffusionFolder, name: string, ctx: VersionBuilderContext, limits: StepLimits, metrics: DiffusionMetrics, instances?: StageInstances): Promise<DiffusionPipeline> {
    const stages = await buildPipelineStages(folder, name, ctx, instances);
    const prompts = await promptEncoder(folder, stages);
    const engine = stages.denoiser.engine;
    // A step's rows stay within the denoiser's max_batch_size: an .om's largest gear (pipeline-stages.ts).
    const steps = engine.register(new StepScheduler(`${name}_denoiser`, engine, limits, metrics.observer(name), stages.denoiser.info.maxBatchSize));
    return new DiffusionPipeline(name, folder, stages, prompts, steps, metrics);
  }

  /** The stages as /v2 models with their own statistics. */
  stageModels(): ServerModel[] {
    return stageList(this.stages).map(ownModel);
  }

  /**
   * Loads the stages. When one fails, the others' loads are waited for first, so a caller that
   * then stops the pipeline finds no stage still loading; a stage that fails on its NPU says which
   * stage (npuStageError).
   */
  async start(): Promise<void> {
    const { textEncoder, textEncoder2, denoiser, vaeDecoder } = this.stages;
    const stages = [
      [textEncoder, 'text_encoder'], ...(textEncoder2 ? [[textEncoder2, 'text_encoder_2'] as const] : []), [denoiser, this.folder.denoiser.kind], [vaeDecoder, 'vae_decoder'],
    ] as const;
    const loads = await Promise.allSettled(stages.map(([stage]) => stage.load()));
    const failed = loads.findIndex((load) => load.status === 'rejected');
    if (failed < 0) return;
    const [stage, dir] = stages[failed]!;
    const cause = (loads[failed] as PromiseRejectedResult).reason as Error;
    throw npuStageError(this.folder, dir, stage.info.name, cause) ?? cause;
  }

  /** Refuses new images, waits for those being generated, then stops the stages. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.inFlight]);
    await Promise.allSettled(stageList(this.stages).map((stage) => stage.unload()));
  }

  ready(): boolean {
    return stageList(this.stages).every((stage) => stage.ready());
  }

  /** Pixels per latent cell times the DiT's 2×2 patch: the multiple sizes must be (16 for the usual VAEs). */
  get sizeMultiple(): number {
    return this.folder.vaeScaleFactor * 2;
  }

  /** Images being generated: stop() lets them finish (their decode needs the VAE) before unloading the stages. */
  private readonly inFlight = new Set<Promise<unknown>>();
  private stopping = false;

  generate(request: ImageRequest): Promise<DecodedImage> {
    if (this.stopping) return Promise.reject(createError('SF_ERR_DRAINING'));
    const running = this.run(request);
    const settled = running.catch(() => undefined);
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
    return running;
  }

  private async run(request: ImageRequest): Promise<DecodedImage> {
    if (!this.ready()) throw createError('SF_ERR_MODEL_NOT_READY', this.name, '1');
    const started = now();
    const guided = request.guidanceScale > 1;
    const encoded = await this.prompts.encode({ prompt: request.prompt, negativePrompt: request.negativePrompt, width: request.width, height: request.height, guided });
    const h = request.height / this.folder.vaeScaleFactor;
    const w = request.width / this.folder.vaeScaleFactor;
    const channels = this.folder.latentChannels ?? fixedDim(this.stages.denoiser.info.inputs.find((s) => s.name === this.stages.names.denoiser.latentInput)?.shape[0]) ?? 4;
    const latentShape = [1, channels, h, w];
    const schedule = scheduleFor(this.folder.scheduler, request.steps, (h / 2) * (w / 2));
    const latents = seededNormal(request.seed ?? randomInt(2 ** 47), channels * h * w);
    // prepare_latents: `latents * scheduler.init_noise_sigma`.
    if (schedule.initNoiseSigma !== 1) for (let i = 0; i < latents.length; i++) latents[i] *= schedule.initNoiseSigma;
    const partials = Math.min(request.partialImages ?? 0, request.steps - 1);
    const previewAfter = new Set(Array.from({ length: partials }, (_, i) => Math.floor(((i + 1) * request.steps) / (partials + 1)) - 1));
    let partialIndex = 0;
    const decodingPartials: Promise<void>[] = [];
    const work = new DenoiseWork(
      {
        ...encoded, schedule, latents, latentShape, guidanceScale: request.guidanceScale, previewAfter, onStep: request.onStep,
        onPreview: request.onPartial && ((preview) => {
          const index = partialIndex++;
          const decoding = this.decode(preview, latentShape).then((image) => request.onPartial!(image, index));
          // Handled now, so a failed preview never rejects unhandled while denoising goes on; awaited below.
          decoding.catch(() => undefined);
          decodingPartials.push(decoding);
        }),
      },
      this.stages.names.denoiser,
      { submittedMs: now() },
    );
    try {
      await this.stages.denoiser.engine.submit(this.steps, work, { signal: request.signal });
    } finally {
      // A preview still decoding when the request fails is waited for, so its failure is never unhandled.
      await Promise.allSettled(decodingPartials);
    }
    await Promise.all(decodingPartials);
    const image = await this.decode(latents, latentShape);
    this.metrics.finished(this.name, (now() - started) / 1000);
    return image;
  }

  /**
   * Latents to pixels in the VAE stage's instance (vae-decoder-instance.ts: the scaling, the
   * decoder, diffusers' rounding to 8-bit RGB): the HTTP thread only receives the bytes.
   */
  private async decode(latents: Float32Array, latentShape: readonly number[]): Promise<DecodedImage> {
    const response = await this.stages.vaeDecoder.infer({ inputs: [{ name: this.stages.names.vaeInput, datatype: 'FP32', shape: [...latentShape], data: latents }], outputs: [{ name: VAE_IMAGE_OUTPUT }] });
    const [, height, width] = response.outputs[0].shape;
    return { width, height, rgb: response.outputs[0].data as Uint8Array };
  }
}

/** The folder's prompt encoding: SDXL's two encoders (dual-text-encoding.ts) or one. */
async function promptEncoder(folder: DiffusionFolder, stages: PipelineStages): Promise<PromptEncoder> {
  const first = { tokenizer: await TextTokenizer.fromFile(folder.tokenizerFile), stage: { model: stages.textEncoder, tokens: stages.names.tokens } };
  const { dual } = stages.names;
  if (!folder.secondEncoder || !stages.textEncoder2 || !dual) return new SingleTextEncoding(first.tokenizer, first.stage, stages.names.textOutput, folder.maxLength);
  const second = { tokenizer: await TextTokenizer.fromFile(folder.secondEncoder.tokenizerFile), stage: { model: stages.textEncoder2, tokens: dual.second.tokens } };
  return new DualTextEncoding([first, second], dual, folder.maxLength, folder.forceZerosForEmptyPrompt);
}

function fixedDim(dim: number | undefined): number | undefined {
  return dim !== undefined && dim > 0 ? dim : undefined;
}

/** A stage as one of the server's own /v2 models. */
function ownModel(model: TensorModelVersion): ServerModel {
  return {
    info: model.info,
    ready: () => model.ready(),
    infer: (request) => model.infer(request),
    indexEntry(): RepositoryIndexEntry {
      const { name, version } = model.info;
      return model.ready() ? { name, version, state: 'READY' } : { name, version, state: 'UNAVAILABLE', reason: 'the pipeline is not loaded' };
    },
  };
}
