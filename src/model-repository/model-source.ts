import { existsSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { LengthBatching } from '../engine/length-batching.js';
import { createError } from '../errors/index.js';
import type { TensorModelKind } from '../wire/tensor-model-plan.js';
import { parseModelConfigJson } from './config-json.js';
import { checkGeParameters } from './ge-parameters.js';
import { buildModelConfig, parseModelConfig, type ModelConfig } from './model-config.js';
import { listVersions, pathInside } from './repository-scan.js';
import { selectVersions } from './version-policy.js';

/** `python`: a Triton Python backend model.py, run in stub processes (python-model.ts). */
export type ModelKind = TensorModelKind | 'python' | 'ensemble';

export interface ModelVersionSource {
  readonly version: string;
  /** The model file; undefined for ensembles, which have none. */
  readonly file?: string;
}

/** A model folder read and checked, before anything is loaded. */
export interface ModelSource {
  readonly name: string;
  readonly dir: string;
  /** As written (config.pbtxt, the load request's config, or defaults), with platform and backend filled in. */
  readonly config: ModelConfig;
  readonly kind: ModelKind;
  /** The versions the version policy serves, ascending. */
  readonly versions: readonly ModelVersionSource[];
  readonly warnings: readonly string[];
  /** Batches formed by length (config.pbtxt has no such field: serve-fn's no-code speech models set it). */
  readonly batchByLength?: LengthBatching;
}

/** Model files per backend, in the order they are looked for when config.pbtxt names no file. */
const DEFAULT_FILES: Readonly<Record<Exclude<ModelKind, 'ensemble'>, readonly string[]>> = {
  onnx: ['model.onnx'],
  npu_om: ['model.om'],
  npu_ge: ['model.onnx'],
  module: ['model.ts', 'model.js'],
  python: ['model.py'],
};
// A model.py without a config naming its backend is a Python backend model, as Triton's auto-complete takes it.
const KIND_BY_EXTENSION: Readonly<Record<string, Exclude<ModelKind, 'ensemble'>>> = { '.onnx': 'onnx', '.om': 'npu_om', '.ts': 'module', '.js': 'module', '.py': 'python' };
/** Triton's platform and backend names for each kind; model.ts models report backend 'serve-fn'. */
const NAMES: Readonly<Record<ModelKind, { platform: string; backend: string }>> = {
  onnx: { platform: 'onnxruntime_onnx', backend: 'onnxruntime' },
  npu_om: { platform: '', backend: 'npu_om' },
  npu_ge: { platform: '', backend: 'npu_ge' },
  module: { platform: '', backend: 'serve-fn' },
  python: { platform: '', backend: 'python' },
  ensemble: { platform: 'ensemble', backend: '' },
};

/**
 * Reads `<root>/<name>`: its configuration (`configJson` overrides config.pbtxt, as Triton's load
 * request does; config.pbtxt may be absent), which backend runs it, and the version folders and
 * model files its version policy serves. Layout problems are SF_ERR_REPOSITORY_INVALID errors
 * naming the path; configuration problems SF_ERR_CONFIG_*; unsupported backends
 * SF_ERR_BACKEND_UNSUPPORTED.
 */
export function readModelSource(root: string, name: string, dir: string, configJson?: string): ModelSource {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw createError('SF_ERR_REPOSITORY_INVALID', root, `it has no model folder '${name}' (${dir})`);
  const configFile = join(dir, 'config.pbtxt');
  const { config, warnings } = configJson !== undefined
    ? parseModelConfigJson(configJson, name)
    : existsSync(configFile)
      ? parseModelConfig(readFileSync(configFile, 'utf8'), configFile, name)
      : buildModelConfig({ kind: 'message', fields: [], line: 1, column: 1 }, configFile, name);
  if (config.name !== name) {
    throw createError('SF_ERR_CONFIG_INVALID', name, `${configJson !== undefined ? 'the config parameter' : configFile} names the model '${config.name}', but its folder is '${name}'; they must match`);
  }

  const available = listVersions(dir);
  const kind = kindOf(config, dir, available);
  if (config.model_transaction_policy?.decoupled && ((kind !== 'module' && kind !== 'python') || config.sequence_batching)) {
    throw createError('SF_ERR_CONFIG_INVALID', name, 'only a model.py, model.ts or model.js model without sequence_batching can be decoupled (model_transaction_policy { decoupled: true })');
  }
  if (kind === 'ensemble') {
    if (!config.ensemble_scheduling) throw createError('SF_ERR_ENSEMBLE_INVALID', name, 'platform "ensemble" needs ensemble_scheduling { step [ ... ] }');
    // Triton wants an empty version folder for an ensemble; without one, serve it as version 1.
    const versions = available.length === 0 ? [1] : selectVersions(name, config.version_policy, available);
    return { name, dir, config: { ...config, ...NAMES.ensemble }, kind, versions: versions.map((v) => ({ version: String(v) })), warnings };
  }
  if (available.length === 0) {
    throw createError('SF_ERR_REPOSITORY_INVALID', root, `model '${name}' has no version folder: put its ${DEFAULT_FILES[kind][0]} in ${join(dir, '1')}`);
  }
  const versions = selectVersions(name, config.version_policy, available).map((v) => ({ version: String(v), file: modelFile(root, config, kind, join(dir, String(v))) }));
  return { name, dir, config: { ...config, ...NAMES[kind] }, kind, versions, warnings };
}

function kindOf(config: ModelConfig, dir: string, versions: readonly number[]): ModelKind {
  const { platform, backend } = config;
  if (platform === 'ensemble') return 'ensemble';
  if (backend === 'npu_ge') {
    checkGeParameters(config);
    return 'npu_ge';
  }
  if (backend === 'npu_om') return 'npu_om';
  if (backend === 'onnxruntime' || platform === 'onnxruntime_onnx') {
    if (placedOnNpu(config)) throw createError('SF_ERR_CONFIG_INVALID', config.name, 'ONNX Runtime does not run on an NPU (KIND_NPU): leave platform and backend out, or set backend "npu_ge", and the ONNX file runs through GE');
    return 'onnx';
  }
  if (backend === 'serve-fn') return 'module';
  if (backend === 'python') {
    const newest = versions.length > 0 ? join(dir, String(versions[versions.length - 1])) : dir;
    // A model.ts / model.js beside (or instead of) model.py is serve-fn's own port of the model.
    return DEFAULT_FILES.module.some((file) => existsSync(join(newest, file))) ? 'module' : 'python';
  }
  if (backend !== '' || platform !== '') {
    throw createError('SF_ERR_BACKEND_UNSUPPORTED', backend || platform, `model '${config.name}': serve-fn serves onnxruntime, npu_om, npu_ge, python (model.py), serve-fn (model.ts) and ensemble models`);
  }
  const detected = detectKind(config, dir, versions);
  if (detected === 'npu_ge') checkGeParameters(config);
  return detected;
}

/** Without platform or backend, the newest version folder's model file says which backend to use. */
function detectKind(config: ModelConfig, dir: string, versions: readonly number[]): Exclude<ModelKind, 'ensemble'> {
  if (versions.length === 0) throw createError('SF_ERR_REPOSITORY_INVALID', dir, 'it has no numeric version folder (such as 1/) holding the model file');
  const newest = join(dir, String(versions[versions.length - 1]));
  const named = config.default_model_filename;
  const found = candidateFiles(config, Object.values(DEFAULT_FILES).flat(), newest).find((path) => existsSync(path));
  const kind = found === undefined ? undefined : kindOfFile(config, found);
  if (kind) return kind;
  const expected = named !== '' ? `${named} (an .onnx, .om, .ts or .js file)` : 'model.onnx, model.ts, model.js or model.om';
  throw createError('SF_ERR_REPOSITORY_INVALID', dir, `${newest} holds no ${expected}; set backend or platform in config.pbtxt, or add the model file`);
}

/**
 * The backend of a model file, by its extension and where the configuration places it: an ONNX
 * file on an Ascend NPU (KIND_NPU) runs through GE (npu_ge), as backendForFile picks for
 * `ctx.loadModel`; undefined for a file no backend takes.
 */
export function kindOfFile(config: ModelConfig, file: string): Exclude<ModelKind, 'ensemble'> | undefined {
  const kind = KIND_BY_EXTENSION[extname(file)] as Exclude<ModelKind, 'ensemble'> | undefined;
  return kind === 'onnx' && placedOnNpu(config) ? 'npu_ge' : kind;
}

/** Triton's platform and backend names of a kind, as readModelSource fills them into a configuration. */
export function backendNames(kind: ModelKind): { platform: string; backend: string } {
  return NAMES[kind];
}

/**
 * Whether the instance groups are serve-fn's KIND_NPU (Triton has none: docs/model-repository.md).
 * One model's groups are all on NPUs or none: an NPU runs another backend than the CPU or a GPU.
 */
export function placedOnNpu(config: ModelConfig): boolean {
  const npu = config.instance_group.filter((group) => group.kind === 'KIND_NPU').length;
  if (npu > 0 && npu < config.instance_group.length) {
    throw createError('SF_ERR_CONFIG_INVALID', config.name, 'instance_group mixes KIND_NPU with other kinds; a model runs either on Ascend NPUs or elsewhere');
  }
  return npu > 0;
}

function modelFile(root: string, config: ModelConfig, kind: Exclude<ModelKind, 'ensemble'>, versionDir: string): string {
  const candidates = candidateFiles(config, DEFAULT_FILES[kind], versionDir);
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw createError('SF_ERR_REPOSITORY_INVALID', root, `model file ${candidates.join(' or ')} does not exist`);
  return found;
}

/** The paths the model file may have in a version folder: default_model_filename, which must stay inside it, or the defaults. */
function candidateFiles(config: ModelConfig, defaults: readonly string[], versionDir: string): string[] {
  const named = config.default_model_filename;
  if (named === '') return defaults.map((file) => join(versionDir, file));
  const path = pathInside(versionDir, named);
  if (path === undefined) throw createError('SF_ERR_CONFIG_INVALID', config.name, `default_model_filename '${named}' is not a file inside the version folder ${versionDir}`);
  return [path];
}
