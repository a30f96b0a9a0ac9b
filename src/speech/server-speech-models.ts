import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createError } from '../errors/index.js';
import { buildModelVersions, type VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { parseModelConfig } from '../model-repository/model-config.js';
import type { ModelSource } from '../model-repository/model-source.js';
import { DEFAULT_AUDIO_LIMITS } from './audio-input.js';
import type { ServerModel } from '../inference/model-catalogue.js';
import type { ServedModel } from '../inference/served-model.js';
import { SPEECH_BATCH_BY_LENGTH } from './speech-batching.js';
import { SpeechChain } from './speech-chain.js';
import { chainFolderRole, readPunctuationFolder, readVadFolder } from './speech-chain-folders.js';
import { PunctuationInferenceModel, VadInferenceModel } from './speech-chain-models.js';
import { punctuationModelConfig, vadModelConfig } from './speech-chain-tensors.js';
import { OFFLINE_ASR_KINDS, readSpeechFolder } from './speech-folder.js';
import type { RecognizerModels } from './speech-model-recognizer.js';
import { SpeechModel } from './speech-model.js';
import { omMaxBatchSize } from './speech-om.js';
import { parseDevice } from '../backends/backend-for-file.js';
import { SPEECH_MAX_BATCH, speechModelConfig } from './speech-tensors.js';

/**
 * The VAD (or punctuation) folder the ASR models chain with: the one named by its flag, else the only
 * one served; two with no flag is ambiguous, as FunASR's server takes one --vad-dir and one --punc-dir.
 */
function chosenFolder(folders: readonly string[], role: 'vad' | 'punctuation', flag: string | undefined, flagName: string): string | undefined {
  if (flag !== undefined) {
    if (chainFolderRole(flag) !== role) throw createError('SF_ERR_SPEECH_FOLDER_INVALID', flag, `${flagName} names a folder whose config.yaml's model is not ${role === 'vad' ? 'FsmnVADStreaming' : 'CTTransformer'}`);
    return flag;
  }
  const found = folders.filter((d) => chainFolderRole(d) === role);
  if (found.length > 1) throw createError('SF_ERR_SPEECH_FOLDER_INVALID', found[1], `${found.length} ${role} folders are served (${found.join(', ')}); name the one to chain with ${flagName}`);
  return found[0];
}

/** The speech flags of `serve-fn start <folder>`. */
export interface SpeechServeOptions {
  /** --quantize: serve model_quant.onnx, as FunASR's runtime's --quantize does. */
  readonly quantize?: boolean;
  /** --max-audio-seconds: the longest audio taken (600 unless set). */
  readonly maxAudioSeconds?: number;
  /** Instances per model (1 unless set); each runs ONNX Runtime on its share of the cores. */
  readonly instances?: number;
  /** Most utterances per forward pass, or chunks of streams per pass of a streaming model (SPEECH_MAX_BATCH unless set; 1: each alone). */
  readonly maxBatchSize?: number;
  /** How long a pass waits for more utterances or stream chunks to join it, in µs (SPEECH_QUEUE_DELAY_US unless set; 0: no wait). */
  readonly maxQueueDelayUs?: number;
  /** --vad-dir / --punc-dir (FunASR's server's flags): the FSMN-VAD and CT-Transformer folders to chain with the ASR models, when several are served. */
  readonly vadDir?: string;
  readonly puncDir?: string;
  /** --device (`cpu`, `npu`, `npu:<id>`): `npu` serves the offline ASR folders' model.om through npu_om (speech-folder.ts speechModelFile); unset, each folder's files decide. */
  readonly device?: string;
}

/** The instance module: this folder's .ts under the TypeScript loader (tests), its .js in dist. */
const moduleFile = (name: string): string => fileURLToPath(new URL(`./${name}${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));
const INSTANCE_MODULE = moduleFile('speech-instance-model');
/** A streaming Paraformer's instance module: the stream state per sequence (paraformer-online-instance-model.ts). */
const STREAMING_INSTANCE_MODULE = moduleFile('paraformer-online-instance-model');
const CHAIN_MODULES = { vad: moduleFile('fsmn-vad-instance-model'), punctuation: moduleFile('ct-punctuation-instance-model') } as const;

/**
 * The speech models one server serves, one per FunASR export folder: each a repository-style model
 * version (its instances host speech-instance-model.ts, batched by Triton's dynamic batcher from
 * its generated config), which the catalogue serves on /v2 and the speech routes transcribe with.
 */
export class ServerSpeechModels {
  private constructor(
    readonly models: readonly SpeechModel[],
    /** The VAD and punctuation model versions the ASR models chain with (speech-chain.ts). */
    private readonly chained: readonly ServedModel[] = [],
    /** Their KServe v2 faces (speech-chain-models.ts): every speech model is a v2 model. */
    private readonly chainFaces: readonly ServerModel[] = [],
  ) {}

  /** Every speech model as /v2 (HTTP and gRPC) serves it: the ASR models, then the VAD and punctuation models. */
  get inferenceModels(): readonly ServerModel[] {
    return [...this.models, ...this.chainFaces];
  }

  static readonly none = new ServerSpeechModels([]);

  static async load(folders: readonly string[], options: SpeechServeOptions, builder: VersionBuilderContext): Promise<ServerSpeechModels> {
    const all = [...folders, ...[options.vadDir, options.puncDir].filter((d): d is string => d !== undefined && !folders.includes(d))];
    if (all.length === 0) return ServerSpeechModels.none;
    if (!existsSync(INSTANCE_MODULE)) throw new Error(`serve-fn's speech instance module is missing (${INSTANCE_MODULE}); rebuild serve-fn`);
    const device = options.device === undefined ? undefined : parseDevice(options.device);
    if (device && device.kind !== 'cpu' && device.kind !== 'npu') throw createError('SF_ERR_BAD_REQUEST', `--device ${options.device}: speech models run on cpu (ONNX Runtime) or npu (a model.om)`);
    const vadDir = chosenFolder(all, 'vad', options.vadDir, '--vad-dir');
    const puncDir = chosenFolder(all, 'punctuation', options.puncDir, '--punc-dir');
    const chainBuild = async (dir: string, role: 'vad' | 'punctuation'): Promise<ServedModel> => {
      const name = basename(dir);
      const text = role === 'vad' ? vadModelConfig(name, { maxAudioSeconds: options.maxAudioSeconds ?? DEFAULT_AUDIO_LIMITS.maxSeconds, quantize: options.quantize === true }) : punctuationModelConfig(name, { quantize: options.quantize === true, maxBatchSize: options.maxBatchSize ?? SPEECH_MAX_BATCH });
      // Read now, so a bad folder is refused at start-up with what is wrong, as an ASR folder is.
      if (role === 'vad') readVadFolder(dir, { quantize: options.quantize });
      else readPunctuationFolder(dir, { quantize: options.quantize });
      const { config } = parseModelConfig(text, `${dir} (generated config.pbtxt)`, name);
      const [version] = await buildModelVersions({ name, dir, config, kind: 'module', versions: [{ version: '1', file: CHAIN_MODULES[role] }], warnings: [] }, builder);
      return version;
    };
    const vad = vadDir === undefined ? undefined : await chainBuild(vadDir, 'vad');
    const punctuation = puncDir === undefined ? undefined : await chainBuild(puncDir, 'punctuation');
    const chain = vad || punctuation ? new SpeechChain(vad, punctuation) : undefined;
    const models: SpeechModel[] = [];
    for (const dir of all.filter((d) => chainFolderRole(d) === undefined)) {
      const folder = readSpeechFolder(dir, { quantize: options.quantize, ...(device ? { device: device.kind === 'npu' ? 'npu' : 'cpu' } : {}) });
      const npuId = device?.kind === 'npu' ? device.id : 0;
      const maxBatchSize = folder.device === 'npu' ? await omMaxBatchSize(folder, npuId, options.maxBatchSize) : (options.maxBatchSize ?? SPEECH_MAX_BATCH);
      const text = speechModelConfig(folder.name, { maxAudioSeconds: options.maxAudioSeconds ?? DEFAULT_AUDIO_LIMITS.maxSeconds, quantize: options.quantize === true, instances: options.instances ?? 1, maxBatchSize, ...(device || folder.device === 'npu' ? { device: { kind: folder.device, id: npuId } } : {}), ...(options.maxQueueDelayUs === undefined ? {} : { maxQueueDelayUs: options.maxQueueDelayUs }), streaming: folder.kind === 'ParaformerStreaming' });
      const { config } = parseModelConfig(text, `${dir} (generated config.pbtxt)`, folder.name);
      const source: ModelSource = { name: folder.name, dir, config, kind: 'module', versions: [{ version: '1', file: folder.kind === 'ParaformerStreaming' ? STREAMING_INSTANCE_MODULE : INSTANCE_MODULE }], warnings: [], ...(folder.kind === 'ParaformerStreaming' ? {} : { batchByLength: SPEECH_BATCH_BY_LENGTH }) };
      const [version] = await buildModelVersions(source, builder);
      const model = new SpeechModel(folder, version);
      model.chain = chain;
      models.push(model);
    }
    if (models.length === 0) throw createError('SF_ERR_SPEECH_FOLDER_INVALID', all[0], 'a VAD or punctuation folder is served beside an ASR folder (SenseVoiceSmall, Paraformer, BiCifParaformer), and none was given');
    const faces = [vad && new VadInferenceModel(vad), punctuation && new PunctuationInferenceModel(punctuation)].filter((m): m is VadInferenceModel | PunctuationInferenceModel => m !== undefined);
    return new ServerSpeechModels(models, [vad, punctuation].filter((m): m is ServedModel => m !== undefined), faces);
  }

  /** Starts every model's instances. */
  async start(): Promise<void> {
    await Promise.all([...this.models.map((m) => m.version), ...this.chained].map((v) => v.load()));
  }

  /** Finishes queued and running requests, then stops the instances. */
  async stop(streamTimeoutMs?: number): Promise<void> {
    await Promise.allSettled([...this.models.map((m) => m.version), ...this.chained].map((v) => v.unload({ streamTimeoutMs })));
  }

  notReady(): string | undefined {
    const down = [...this.models, ...this.chained].find((m) => !m.ready());
    return down && `speech model '${down.info.name}' is not ready`;
  }

  /**
   * The models of a FunASR WebSocket session, as FunASR's 2pass server pairs a streaming and an
   * offline ASR model: the named one in its role, and the first served model of the other role.
   */
  recognizerModels(name: string | undefined): RecognizerModels {
    const named = name === undefined || name === '' ? undefined : this.find(name);
    const online = named?.streaming ? named : this.models.find((m) => m.streaming);
    const offline = named && OFFLINE_ASR_KINDS.includes(named.folder.kind) ? named : this.models.find((m) => OFFLINE_ASR_KINDS.includes(m.folder.kind));
    if (!online && !offline) return { offline: this.find(name) };
    return { ...(online ? { online } : {}), ...(offline ? { offline } : {}) };
  }

  /** The model a request names; with no name, the only one (or the first when several are served). */
  find(name: string | undefined): SpeechModel {
    const found = name === undefined || name === '' ? this.models[0] : this.models.find((m) => m.info.name === name);
    if (!found) throw createError('SF_ERR_SPEECH_MODEL_UNKNOWN', name ?? '', this.models.map((m) => m.info.name).join(', '));
    return found;
  }
}
