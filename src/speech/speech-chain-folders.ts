import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { parseAmMvn } from './cmvn.js';
import type { FsmnVadConfig } from './fsmn-vad.js';
import { vadOptions } from './fsmn-vad-state-machine.js';
import { frontEndConfig, readSpeechConfig, SPEECH_FILES } from './speech-folder.js';

/** A FunASR FSMN-VAD export (`model: FsmnVADStreaming`): model.onnx, am.mvn, config.yaml. */
export interface VadFolder {
  readonly dir: string;
  readonly name: string;
  readonly modelFile: string;
  readonly config: FsmnVadConfig;
}

/** A FunASR CT-Transformer punctuation export (`model: CTTransformer`): model.onnx, tokens.json, config.yaml's punc_list. */
export interface PunctuationFolder {
  readonly dir: string;
  readonly name: string;
  readonly modelFile: string;
  readonly tokens: readonly string[];
  /** `model_conf.punc_list`, with `,` and `?` shown as `，` and `？` as funasr_onnx's CT_Transformer shows them. */
  readonly puncList: readonly string[];
}

/** The FSMN-VAD template's front end (funasr/models/fsmn_vad_streaming/template.yaml and its exports: 80 bins, lfr_m 5, lfr_n 1, 400 dims). */
const VAD_FRONT_END = { numMelBins: 80, frameLengthMs: 25, frameShiftMs: 10, lfrM: 5, lfrN: 1 } as const;

/** 'vad' or 'punctuation' for a folder whose config.yaml names FsmnVADStreaming or CTTransformer (the models a chain adds to an ASR model). */
export function chainFolderRole(dir: string): 'vad' | 'punctuation' | undefined {
  try {
    const model = (parse(readFileSync(join(dir, SPEECH_FILES.config), 'utf8')) as { model?: unknown } | null)?.model;
    return model === 'FsmnVADStreaming' ? 'vad' : model === 'CTTransformer' ? 'punctuation' : undefined;
  } catch {
    return undefined;
  }
}

function readConfig(dir: string, expected: string): { config: Record<string, unknown>; fail: (why: string, cause?: unknown) => Error } {
  const { config, fail } = readSpeechConfig(dir);
  if (config.model !== expected) throw fail(`its config.yaml's model is '${String(config.model)}', not ${expected}`);
  return { config, fail };
}

function modelFile(dir: string, quantize: boolean | undefined, others: readonly string[], fail: (why: string) => Error): string {
  const model = quantize ? SPEECH_FILES.quantModel : SPEECH_FILES.model;
  const missing = [model, ...others].filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) throw fail(`it has no ${missing.join(', ')}${missing.includes(model) ? ` (export it with funasr.AutoModel(...).export(type="onnx"${quantize ? ', quantize=True' : ''}))` : ''}`);
  return join(dir, model);
}

/** Reads and checks an FSMN-VAD folder; SF_ERR_SPEECH_FOLDER_INVALID names what is missing or wrong. */
export function readVadFolder(dir: string, options: { readonly quantize?: boolean } = {}): VadFolder {
  const { config, fail } = readConfig(dir, 'FsmnVADStreaming');
  const file = modelFile(dir, options.quantize, [SPEECH_FILES.cmvn], fail);
  let cmvn;
  try {
    cmvn = parseAmMvn(readFileSync(join(dir, SPEECH_FILES.cmvn), 'utf8'));
  } catch (err) {
    throw fail(`its am.mvn: ${(err as Error).message}`, err);
  }
  const frontEnd = frontEndConfig(config.frontend_conf, fail, VAD_FRONT_END);
  if (cmvn.shift.length !== frontEnd.numMelBins * frontEnd.lfrM) throw fail(`its am.mvn has ${cmvn.shift.length} values per frame, where frontend_conf's n_mels × lfr_m is ${frontEnd.numMelBins * frontEnd.lfrM}`);
  const encoder = (config.encoder_conf ?? {}) as Record<string, unknown>;
  const int = (key: string, fallback: number): number => {
    const value = encoder[key] ?? fallback;
    if (!Number.isInteger(value) || (value as number) < 1) throw fail(`encoder_conf.${key} must be a positive integer (got ${String(value)})`);
    return value as number;
  };
  const cache = { layers: int('fsmn_layers', 4), projDim: int('proj_dim', 128), lorder: int('lorder', 20) };
  if (cache.lorder < 2) throw fail('encoder_conf.lorder must be at least 2 (the cache holds lorder − 1 frames)');
  return { dir, name: basename(dir), modelFile: file, config: { frontEnd, cmvn, cache, vad: vadOptions((config.model_conf ?? {}) as Record<string, unknown>) } };
}

/** Reads and checks a CT-Transformer punctuation folder. */
export function readPunctuationFolder(dir: string, options: { readonly quantize?: boolean } = {}): PunctuationFolder {
  const { config, fail } = readConfig(dir, 'CTTransformer');
  const file = modelFile(dir, options.quantize, [SPEECH_FILES.tokens], fail);
  let tokens: unknown;
  try {
    tokens = JSON.parse(readFileSync(join(dir, SPEECH_FILES.tokens), 'utf8'));
  } catch (err) {
    throw fail(`its tokens.json is not JSON (${(err as Error).message})`, err);
  }
  if (!Array.isArray(tokens) || tokens.length === 0 || !tokens.every((t) => typeof t === 'string')) throw fail('its tokens.json is not a JSON array of strings (the word of each id)');
  const list = ((config.model_conf ?? {}) as Record<string, unknown>).punc_list;
  if (!Array.isArray(list) || !list.every((p) => typeof p === 'string') || !list.includes('_')) throw fail("its config.yaml has no model_conf.punc_list (strings, '_' for no punctuation)");
  const puncList = (list as string[]).map((p) => (p === ',' ? '，' : p === '?' ? '？' : p));
  return { dir, name: basename(dir), modelFile: file, tokens, puncList };
}
