import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createError, ServeFnError } from '../errors/index.js';
import { buildModelVersions, readModelFileMetadata, type VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { parseModelConfigJson } from '../model-repository/config-json.js';
import type { ModelSource } from '../model-repository/model-source.js';
import { TensorModelVersion } from '../inference/tensor-model-version.js';
import type { TensorSpec } from '../spec/tensor.js';
import { TIMESTEP_TYPES, type DenoiserInterface } from './denoise-work.js';
import { dualEncoderNames, SDXL_ADDED_INPUTS, type DualEncoderNames } from './dual-text-encoding.js';
import type { DiffusionFolder } from './pipeline-folder.js';
import { onnxStageBackend, withStageConfig } from './stage-config.js';
import { withInstanceCount, type StageInstances, type StageName } from './stage-instances.js';
import { VAE_IMAGE_OUTPUT, VAE_PARAMETERS } from './vae-decoder-instance.js';

/** The most rows one stage call takes: requests times two with guidance; vLLM-Omni's step batches are far smaller. */
const STAGE_MAX_BATCH = 64;
/** The VAE stage's instance module, run as a repository model.ts is (.ts under the test runner, .js from dist). */
const VAE_DECODER_MODULE = fileURLToPath(new URL(`./vae-decoder-instance${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));

/**
 * A pipeline's stages (text encoder — two for SDXL-style folders —, denoiser, VAE decoder), each a model of its own on the engine (its own InstanceEngine and
 * worker-thread instances, nv_* statistics, a /v2 model named `<pipeline>_<stage>`): built as
 * repository models are, from a config that names the stage's model.onnx, completed from the
 * file's own inputs and outputs, with the stage folder's own config.pbtxt instance_group and
 * parameters (stage-config.ts). The VAE decoder's instances run vae-decoder-instance.ts, which runs
 * its model.onnx and turns the sample into 8-bit RGB in the instance's thread. The text encoder
 * and VAE decoder batch requests that arrive together (dynamic_batching); the denoiser's steps are
 * batched by the pipeline's step scheduler on the denoiser's engine.
 */
export interface PipelineStages {
  readonly textEncoder: TensorModelVersion;
  /** An SDXL-style pipeline's text_encoder_2, `<pipeline>_text_encoder_2`. */
  readonly textEncoder2?: TensorModelVersion;
  readonly denoiser: TensorModelVersion;
  readonly vaeDecoder: TensorModelVersion;
  readonly names: {
    readonly tokens: TensorSpec;
    /** text_encoder's output read: last_hidden_state (else its first output), or SDXL's penultimate layer (dual). */
    readonly textOutput: string;
    readonly dual?: DualEncoderNames;
    readonly denoiser: DenoiserInterface;
    /** The VAE stage's latents input; it answers VAE_IMAGE_OUTPUT, 8-bit RGB. */
    readonly vaeInput: string;
  };
}

/** `instances`: per-stage instance counts that win over the stage folders' config.pbtxt (`--stage-instances`). */
export async function buildPipelineStages(folder: DiffusionFolder, name: string, ctx: VersionBuilderContext, instances: StageInstances = {}): Promise<PipelineStages> {
  const stage = async (suffix: StageName, stageDir: string, file: string, kind: 'onnx' | 'module', json: Record<string, unknown>): Promise<TensorModelVersion> => {
    const stageName = `${name}_${suffix}`;
    const built = { name: stageName, max_batch_size: STAGE_MAX_BATCH, ...json };
    try {
      const own = withStageConfig(parseModelConfigJson(JSON.stringify(built), stageName).config, join(folder.dir, stageDir), stageName);
      const config = withInstanceCount(own, instances[suffix]);
      const backend = kind === 'onnx' ? onnxStageBackend(config, join(folder.dir, stageDir), file) : { kind, file, config };
      const source: ModelSource = { name: stageName, dir: folder.dir, config: backend.config, kind: backend.kind, versions: [{ version: '1', file: backend.file }], warnings: [] };
      const [version] = await buildModelVersions(source, ctx);
      return version as TensorModelVersion;
    } catch (cause) {
      throw stageError(folder, stageDir, stageName, cause as Error);
    }
  };
  const onnx = (batching: boolean) => ({ platform: 'onnxruntime_onnx', backend: 'onnxruntime', ...(batching ? { dynamic_batching: {} } : {}) });
  const textEncoder = await stage('text_encoder', 'text_encoder', folder.textEncoderFile, 'onnx', onnx(true));
  const textEncoder2 = folder.secondEncoder && await stage('text_encoder_2', 'text_encoder_2', folder.secondEncoder.textEncoderFile, 'onnx', onnx(true));
  const denoiser = await stage('denoiser', folder.denoiser.kind, folder.denoiser.file, 'onnx', onnx(false));
  const vae = await vaeInterface(folder);
  const vaeDecoder = await stage('vae_decoder', 'vae_decoder', VAE_DECODER_MODULE, 'module', {
    backend: 'serve-fn', dynamic_batching: {},
    input: [{ name: vae.input, data_type: 'TYPE_FP32', dims: vae.dims }],
    output: [{ name: VAE_IMAGE_OUTPUT, data_type: 'TYPE_UINT8', dims: [-1, -1, 3] }],
    parameters: {
      [VAE_PARAMETERS.model]: { string_value: relative(folder.dir, folder.vaeDecoderFile) },
      [VAE_PARAMETERS.input]: { string_value: vae.input },
      [VAE_PARAMETERS.output]: { string_value: vae.output },
      [VAE_PARAMETERS.scaling]: { string_value: String(folder.scalingFactor) },
      [VAE_PARAMETERS.shift]: { string_value: String(folder.shiftFactor) },
    },
  });
  return { textEncoder, ...(textEncoder2 ? { textEncoder2 } : {}), denoiser, vaeDecoder, names: interfaceOf(folder, textEncoder, textEncoder2, denoiser, vae.input) };
}

/** Every stage of a pipeline, text encoders first. */
export function stageList(stages: PipelineStages): TensorModelVersion[] {
  return [stages.textEncoder, ...(stages.textEncoder2 ? [stages.textEncoder2] : []), stages.denoiser, stages.vaeDecoder];
}

/**
 * A stage that cannot be built: an NPU that is not there keeps its own error (SF_ERR_NPU_*, which
 * says how to get the library or the GE addon), naming the stage; anything else is the folder's.
 */
function stageError(folder: DiffusionFolder, stageDir: string, stageName: string, cause: Error): ServeFnError {
  return npuStageError(folder, stageDir, stageName, cause) ?? createError('SF_ERR_DIFFUSION_FOLDER_INVALID', folder.dir, `${stageDir}: ${cause.message}`, { cause });
}

/** An NPU's error (SF_ERR_NPU_*) in a stage's build or load failure, again with that code, naming the stage; else undefined. */
export function npuStageError(folder: DiffusionFolder, stageDir: string, stageName: string, cause: Error): ServeFnError | undefined {
  const npu = npuError(cause);
  return npu && new ServeFnError(npu.code, `stage ${stageName} (${join(folder.dir, stageDir)}): ${npu.message}`, npu.statusCode, { cause });
}

/** The SF_ERR_NPU_* error in `err`'s cause chain (an instance's failed load wraps it), if any. */
function npuError(err: unknown): ServeFnError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof ServeFnError && e.code.startsWith('SF_ERR_NPU_')) return e;
  }
  return undefined;
}

/**
 * The VAE decoder's input and output names and latent dimensions, read from its model.onnx on the
 * CPU (as a repository model's configuration is completed from its file), for the stage's instance,
 * which runs the file and the image post-processing (vae-decoder-instance.ts).
 */
async function vaeInterface(folder: DiffusionFolder): Promise<{ input: string; output: string; dims: number[] }> {
  const metadata = await readModelFileMetadata(folder.vaeDecoderFile, { kind: 'cpu', id: 0 }, true);
  const input = metadata.inputs.find((s) => s.name === 'latent_sample');
  if (!input) throw createError('SF_ERR_DIFFUSION_FOLDER_INVALID', folder.dir, `vae_decoder/model.onnx has no input named latent_sample (its inputs: ${metadata.inputs.map((s) => s.name).join(', ')})`);
  if (input.datatype !== 'FP32') throw createError('SF_ERR_DIFFUSION_FOLDER_INVALID', folder.dir, `vae_decoder's latent_sample is ${input.datatype}; FP32 expected (fp16 exports are not served yet)`);
  const output = metadata.outputs.find((s) => s.name === 'sample') ?? metadata.outputs[0];
  return { input: input.name, output: output.name, dims: input.shape.slice(1).map((d) => (d > 0 ? d : -1)) };
}

/** The stages' tensors by the names diffusers / optimum export them; anything else is refused, naming it. */
function interfaceOf(folder: DiffusionFolder, textEncoder: TensorModelVersion, textEncoder2: TensorModelVersion | undefined, denoiser: TensorModelVersion, vaeInput: string): PipelineStages['names'] {
  const fail = (why: string): never => {
    throw createError('SF_ERR_DIFFUSION_FOLDER_INVALID', folder.dir, why);
  };
  const find = (model: TensorModelVersion, names: readonly string[], what: string): TensorSpec =>
    model.info.inputs.find((s) => names.includes(s.name)) ?? fail(`${what} has no input named ${names.join(' or ')} (its inputs: ${model.info.inputs.map((s) => s.name).join(', ')})`);
  const tokens = find(textEncoder, ['input_ids'], 'text_encoder/model.onnx');
  if (tokens.datatype !== 'INT64' && tokens.datatype !== 'INT32') fail(`text_encoder's input_ids is ${tokens.datatype}; INT64 or INT32 expected`);
  const dual = textEncoder2 && dualEncoderNames(textEncoder, textEncoder2, denoiser, fail);
  const textOutput = dual?.firstHidden ?? textEncoder.info.outputs.find((s) => s.name === 'last_hidden_state')?.name ?? textEncoder.info.outputs[0].name;
  const latent = find(denoiser, folder.denoiser.kind === 'unet' ? ['sample'] : ['hidden_states'], `${folder.denoiser.kind}/model.onnx`);
  const timestep = find(denoiser, ['timestep'], `${folder.denoiser.kind}/model.onnx`);
  const text = find(denoiser, ['encoder_hidden_states'], `${folder.denoiser.kind}/model.onnx`);
  const fed = (s: TensorSpec): boolean => [latent, timestep, text].includes(s) || (dual !== undefined && (SDXL_ADDED_INPUTS as readonly string[]).includes(s.name));
  const others = denoiser.info.inputs.filter((s) => !fed(s) && !s.optional);
  if (others.length > 0) fail(`the denoiser also needs ${others.map((s) => s.name).join(', ')}, which this server does not feed (pooled projections, guidance embeddings; SDXL's text_embeds and time_ids only beside tokenizer_2/ and text_encoder_2/)`);
  if (latent.datatype !== 'FP32' || text.datatype !== 'FP32') fail(`the denoiser's ${latent.name} and ${text.name} must be FP32 (fp16 exports are not served yet)`);
  if (!TIMESTEP_TYPES.includes(timestep.datatype)) fail(`the denoiser's timestep is ${timestep.datatype}; one of ${TIMESTEP_TYPES.join(', ')} expected`);
  return {
    tokens,
    textOutput,
    ...(dual ? { dual } : {}),
    denoiser: { latentInput: latent.name, timestepInput: timestep.name, timestepType: timestep.datatype, textInput: text.name, output: denoiser.info.outputs[0].name },
    vaeInput,
  };
}
