import { createError } from '../errors/index.js';
import { buildModelVersions, type VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { parseModelConfigJson } from '../model-repository/config-json.js';
import type { ModelSource } from '../model-repository/model-source.js';
import { TensorModelVersion } from '../inference/tensor-model-version.js';
import type { TensorSpec } from '../spec/tensor.js';
import { TIMESTEP_TYPES, type DenoiserInterface } from './denoise-work.js';
import type { DiffusionFolder } from './pipeline-folder.js';

/** The most rows one stage call takes: requests times two with guidance; vLLM-Omni's step batches are far smaller. */
const STAGE_MAX_BATCH = 64;

/**
 * A pipeline's three stages, each a model of its own on the engine (its own InstanceEngine and
 * worker-thread instance running ONNX Runtime, nv_* statistics, a /v2 model named
 * `<pipeline>_<stage>`): built as repository models are, from a config that names the stage's
 * model.onnx, completed from the file's own inputs and outputs. The text encoder and VAE decoder
 * batch requests that arrive together (dynamic_batching); the denoiser's steps are batched by the
 * pipeline's step scheduler on the denoiser's engine.
 */
export interface PipelineStages {
  readonly textEncoder: TensorModelVersion;
  readonly denoiser: TensorModelVersion;
  readonly vaeDecoder: TensorModelVersion;
  readonly names: {
    readonly tokens: TensorSpec;
    readonly textOutput: string;
    readonly denoiser: DenoiserInterface;
    readonly vaeInput: string;
    readonly vaeOutput: string;
  };
}

export async function buildPipelineStages(folder: DiffusionFolder, name: string, ctx: VersionBuilderContext): Promise<PipelineStages> {
  const stage = async (suffix: string, file: string, batching: boolean): Promise<TensorModelVersion> => {
    const stageName = `${name}_${suffix}`;
    const json = { name: stageName, platform: 'onnxruntime_onnx', backend: 'onnxruntime', max_batch_size: STAGE_MAX_BATCH, ...(batching ? { dynamic_batching: {} } : {}) };
    const { config } = parseModelConfigJson(JSON.stringify(json), stageName);
    const source: ModelSource = { name: stageName, dir: folder.dir, config, kind: 'onnx', versions: [{ version: '1', file }], warnings: [] };
    try {
      const [version] = await buildModelVersions(source, ctx);
      return version as TensorModelVersion;
    } catch (cause) {
      throw createError('SF_ERR_DIFFUSION_FOLDER_INVALID', folder.dir, `${suffix}: ${(cause as Error).message}`, { cause });
    }
  };
  const textEncoder = await stage('text_encoder', folder.textEncoderFile, true);
  const denoiser = await stage('denoiser', folder.denoiser.file, false);
  const vaeDecoder = await stage('vae_decoder', folder.vaeDecoderFile, true);
  return { textEncoder, denoiser, vaeDecoder, names: interfaceOf(folder, textEncoder, denoiser, vaeDecoder) };
}

/** The stages' tensors by the names diffusers / optimum export them; anything else is refused, naming it. */
function interfaceOf(folder: DiffusionFolder, textEncoder: TensorModelVersion, denoiser: TensorModelVersion, vae: TensorModelVersion): PipelineStages['names'] {
  const fail = (why: string): never => {
    throw createError('SF_ERR_DIFFUSION_FOLDER_INVALID', folder.dir, why);
  };
  const find = (model: TensorModelVersion, names: readonly string[], what: string): TensorSpec =>
    model.info.inputs.find((s) => names.includes(s.name)) ?? fail(`${what} has no input named ${names.join(' or ')} (its inputs: ${model.info.inputs.map((s) => s.name).join(', ')})`);
  const tokens = find(textEncoder, ['input_ids'], 'text_encoder/model.onnx');
  if (tokens.datatype !== 'INT64' && tokens.datatype !== 'INT32') fail(`text_encoder's input_ids is ${tokens.datatype}; INT64 or INT32 expected`);
  const textOutput = textEncoder.info.outputs.find((s) => s.name === 'last_hidden_state')?.name ?? textEncoder.info.outputs[0].name;
  const latent = find(denoiser, folder.denoiser.kind === 'unet' ? ['sample'] : ['hidden_states'], `${folder.denoiser.kind}/model.onnx`);
  const timestep = find(denoiser, ['timestep'], `${folder.denoiser.kind}/model.onnx`);
  const text = find(denoiser, ['encoder_hidden_states'], `${folder.denoiser.kind}/model.onnx`);
  const others = denoiser.info.inputs.filter((s) => ![latent, timestep, text].includes(s) && !s.optional);
  if (others.length > 0) fail(`the denoiser also needs ${others.map((s) => s.name).join(', ')}, which this server does not feed (pooled projections, guidance embeddings)`);
  if (latent.datatype !== 'FP32' || text.datatype !== 'FP32') fail(`the denoiser's ${latent.name} and ${text.name} must be FP32 (fp16 exports are not served yet)`);
  if (!TIMESTEP_TYPES.includes(timestep.datatype)) fail(`the denoiser's timestep is ${timestep.datatype}; one of ${TIMESTEP_TYPES.join(', ')} expected`);
  const vaeInput = find(vae, ['latent_sample'], 'vae_decoder/model.onnx').name;
  const vaeOutput = vae.info.outputs.find((s) => s.name === 'sample')?.name ?? vae.info.outputs[0].name;
  return {
    tokens,
    textOutput,
    denoiser: { latentInput: latent.name, timestepInput: timestep.name, timestepType: timestep.datatype, textInput: text.name, output: denoiser.info.outputs[0].name },
    vaeInput,
    vaeOutput,
  };
}
