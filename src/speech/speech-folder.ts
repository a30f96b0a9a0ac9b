import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { createError } from '../errors/index.js';
import { parseAmMvn, type Cmvn } from './cmvn.js';
import { sentencePiecePieces } from './sentencepiece-model.js';
import { DEFAULT_FRONT_END, type FrontEndConfig } from './speech-front-end.js';
import { streamingParaformerConfig, type StreamingParaformerConfig } from './paraformer-online-config.js';

/**
 * The kinds of FunASR export folder, named by config.yaml's `model:` as FunASR's AutoModel names
 * them (funasr/models/*): not by the folder's name, which FunASR's C++ runtime looks at.
 */
export const SPEECH_KINDS = ['SenseVoiceSmall', 'Paraformer', 'BiCifParaformer', 'ParaformerStreaming', 'FsmnVADStreaming', 'CTTransformer'] as const;
export type SpeechKind = (typeof SPEECH_KINDS)[number];
/** The kinds that transcribe a whole utterance, which serve-fn serves today. */
export const OFFLINE_ASR_KINDS: readonly SpeechKind[] = ['SenseVoiceSmall', 'Paraformer', 'BiCifParaformer'];

/** File names FunASR's runtimes look for (runtime/onnxruntime/include/com-define.h). */
export const SPEECH_FILES = { model: 'model.onnx', quantModel: 'model_quant.onnx', config: 'config.yaml', cmvn: 'am.mvn', tokens: 'tokens.json', segDict: 'seg_dict', decoder: 'decoder.onnx', om: 'model.om', quantDecoder: 'decoder_quant.onnx', senseVoiceBpe: 'chn_jpn_yue_eng_ko_spectok.bpe.model' } as const;

export interface SpeechFolder {
  readonly dir: string;
  /** The served name: the folder's name. */
  readonly name: string;
  readonly kind: SpeechKind;
  /** model.onnx, or model_quant.onnx with --quantize (FunASR's runtime's choice), or model.om (speechModelFile). */
  readonly modelFile: string;
  /** Where modelFile runs: `npu` for a model.om (the npu_om backend, through AscendCL), else `cpu` (ONNX Runtime). */
  readonly device: SpeechDevice;
  readonly frontEnd: FrontEndConfig;
  readonly cmvn: Cmvn;
  /** tokens.json: piece per id. */
  readonly tokens: readonly string[];
  /** Paraformer's `model_conf.predictor_bias` (1 in FunASR's template). */
  readonly predictorBias: number;
  /** A streaming Paraformer's decoder.onnx and the shapes of its caches (paraformer-online-config.ts). */
  readonly streaming?: StreamingParaformerConfig;
}

export type SpeechDevice = 'cpu' | 'npu';

export interface SpeechFolderOptions {
  /** --quantize: serve model_quant.onnx. */
  readonly quantize?: boolean;
  /** --device: `npu` serves an offline ASR folder's model.om; unset, the folder's files decide (speechModelFile). */
  readonly device?: SpeechDevice;
}

/**
 * The model file an offline ASR folder is served from, inferred from its files as BentoML infers a
 * runner's default device: model.om (FunASR's runtime names, compiled by ATC or `serve-fn convert`)
 * with `--device npu`, or when it is the only model file, so a folder made for an Ascend server
 * needs no flag; beside an ONNX file the ONNX file stays the default, since it runs everywhere.
 * Streaming Paraformer, VAD and punctuation folders stay on ONNX Runtime (docs/speech.md).
 */
export function speechModelFile(dir: string, kind: SpeechKind, options: SpeechFolderOptions): { name: string; device: SpeechDevice } {
  const onnx = options.quantize ? SPEECH_FILES.quantModel : SPEECH_FILES.model;
  if (!OFFLINE_ASR_KINDS.includes(kind) || options.device === 'cpu') return { name: onnx, device: 'cpu' };
  const om = options.device === 'npu' || (!existsSync(join(dir, onnx)) && existsSync(join(dir, SPEECH_FILES.om)));
  return om ? { name: SPEECH_FILES.om, device: 'npu' } : { name: onnx, device: 'cpu' };
}

/** A FunASR export folder: config.yaml whose `model:` names a FunASR model. What else it needs is checked when it is read. */
export function isSpeechFolder(dir: string): boolean {
  const config = join(dir, SPEECH_FILES.config);
  if (!existsSync(config) || !statSync(config).isFile()) return false;
  try {
    const model = (parse(readFileSync(config, 'utf8')) as { model?: unknown } | null)?.model;
    return typeof model === 'string' && model !== '';
  } catch {
    return false;
  }
}

/** A FunASR export folder's config.yaml, and how to refuse the folder (SF_ERR_SPEECH_FOLDER_INVALID, naming it). */
export function readSpeechConfig(dir: string): { config: Record<string, unknown>; fail: (why: string, cause?: unknown) => Error } {
  const fail = (why: string, cause?: unknown): Error => createError('SF_ERR_SPEECH_FOLDER_INVALID', dir, why, ...(cause === undefined ? [] : [{ cause }]));
  try {
    return { config: (parse(readFileSync(join(dir, SPEECH_FILES.config), 'utf8')) ?? {}) as Record<string, unknown>, fail };
  } catch (err) {
    throw fail(`its config.yaml could not be read (${(err as Error).message})`, err);
  }
}

/** Reads and checks a FunASR export folder; SF_ERR_SPEECH_FOLDER_INVALID names what is missing or wrong. */
export function readSpeechFolder(dir: string, options: SpeechFolderOptions = {}): SpeechFolder {
  const { config, fail } = readSpeechConfig(dir);
  const declared = String(config.model ?? '');
  const kind = streamingParaformer(declared, dir) ? 'ParaformerStreaming' : SPEECH_KINDS.find((k) => k === declared);
  if (!kind) throw fail(`config.yaml's model '${declared}' is not a FunASR model serve-fn knows (${SPEECH_KINDS.join(', ')})`);
  if (!OFFLINE_ASR_KINDS.includes(kind) && kind !== 'ParaformerStreaming') {
    const chained = kind === 'FsmnVADStreaming' || kind === 'CTTransformer' ? ' (a VAD or punctuation folder is read by speech-chain-folders.ts and served beside an ASR folder)' : ' (docs/speech.md lists what is not done)';
    throw fail(`it is a ${kind} export; serve-fn transcribes with SenseVoiceSmall, Paraformer, BiCifParaformer and streaming Paraformer (ParaformerStreaming) folders so far${chained}`);
  }
  const { name: modelName, device } = speechModelFile(dir, kind, options);
  const decoderName = options.quantize ? SPEECH_FILES.quantDecoder : SPEECH_FILES.decoder;
  // SenseVoice's export ships its SentencePiece model, which funasr_onnx reads; FunASR's C++ runtime reads tokens.json.
  const bpeModel = kind === 'SenseVoiceSmall' && !existsSync(join(dir, SPEECH_FILES.tokens)) && existsSync(join(dir, SPEECH_FILES.senseVoiceBpe));
  const missing = [modelName, ...(kind === 'ParaformerStreaming' ? [decoderName] : []), SPEECH_FILES.cmvn, ...(bpeModel ? [] : [SPEECH_FILES.tokens])].filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) {
    const bpe = missing.includes(SPEECH_FILES.tokens) && kind === 'SenseVoiceSmall' ? ` (FunASR's C++ runtime reads tokens.json; a SentencePiece model is read too, named ${SPEECH_FILES.senseVoiceBpe} as funasr_onnx names it)` : '';
    const export_ = modelName === SPEECH_FILES.om && missing.includes(modelName) ? ' (--device npu serves a model.om: compile model.onnx with ATC or `serve-fn convert`, docs/speech.md)' : missing.includes(modelName) ? ` (export it with funasr-export or funasr.AutoModel(...).export(type="onnx"${options.quantize ? ', quantize=True' : ''}))` : '';
    throw fail(`it has no ${missing.join(', ')}${export_}${bpe}`);
  }
  let cmvn: Cmvn;
  try {
    cmvn = parseAmMvn(readFileSync(join(dir, SPEECH_FILES.cmvn), 'utf8'));
  } catch (err) {
    throw fail(`its am.mvn: ${(err as Error).message}`, err);
  }
  let tokens: unknown;
  try {
    tokens = bpeModel ? sentencePiecePieces(readFileSync(join(dir, SPEECH_FILES.senseVoiceBpe))) : JSON.parse(readFileSync(join(dir, SPEECH_FILES.tokens), 'utf8'));
  } catch (err) {
    throw fail(bpeModel ? `its ${SPEECH_FILES.senseVoiceBpe} could not be read: ${(err as Error).message}` : `its tokens.json is not JSON (${(err as Error).message})`, err);
  }
  if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === 'string')) throw fail('its tokens.json is not a JSON array of strings (the piece of each id)');
  const frontEnd = frontEndConfig(config.frontend_conf, fail);
  if (cmvn.shift.length !== frontEnd.numMelBins * frontEnd.lfrM) throw fail(`its am.mvn has ${cmvn.shift.length} values per frame, where frontend_conf's n_mels × lfr_m is ${frontEnd.numMelBins * frontEnd.lfrM}`);
  const modelConf = (config.model_conf ?? {}) as Record<string, unknown>;
  const predictorBias = typeof modelConf.predictor_bias === 'number' ? modelConf.predictor_bias : kind === 'SenseVoiceSmall' ? 0 : 1;
  const streaming = kind === 'ParaformerStreaming' ? streamingParaformerConfig(config, join(dir, decoderName), frontEnd, fail) : undefined;
  return { dir, name: basename(dir), kind, modelFile: join(dir, modelName), device, frontEnd, cmvn, tokens, predictorBias, ...(streaming ? { streaming } : {}) };
}

function streamingParaformer(declared: string, dir: string): boolean {
  return declared.startsWith('Paraformer') && declared !== 'Paraformer' && existsSync(join(dir, SPEECH_FILES.decoder));
}

/** frontend_conf, as FunASR's WavFrontend reads it (fs, window, n_mels, frame_length, frame_shift, lfr_m, lfr_n). */
export function frontEndConfig(raw: unknown, fail: (why: string) => Error, defaults: FrontEndConfig = DEFAULT_FRONT_END): FrontEndConfig {
  const conf = (raw ?? {}) as Record<string, unknown>;
  if (conf.fs !== undefined && conf.fs !== 16000) throw fail(`frontend_conf.fs is ${String(conf.fs)}; FunASR's front end runs at 16000 Hz`);
  if (conf.window !== undefined && conf.window !== 'hamming') throw fail(`frontend_conf.window is ${String(conf.window)}; FunASR's runtimes use hamming`);
  const int = (key: string, fallback: number): number => {
    const value = conf[key] ?? fallback;
    if (!Number.isInteger(value) || (value as number) < 1) throw fail(`frontend_conf.${key} must be a positive integer (got ${String(value)})`);
    return value as number;
  };
  return {
    numMelBins: int('n_mels', defaults.numMelBins),
    frameLengthMs: int('frame_length', defaults.frameLengthMs),
    frameShiftMs: int('frame_shift', defaults.frameShiftMs),
    lfrM: int('lfr_m', defaults.lfrM),
    lfrN: int('lfr_n', defaults.lfrN),
  };
}
