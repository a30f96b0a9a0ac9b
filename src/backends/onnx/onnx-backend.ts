import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import { createError } from '../../errors/index.js';
import type { Backend, BackendLoadOptions, DeviceSpec } from '../backend.js';
import { onnxRuntimeLoadFailure } from './onnx-runtime-missing.js';
import { OnnxSession } from './onnx-session.js';

/** The parts of onnxruntime-node the backend uses; tests can hand in a stand-in. */
export type OrtRuntime = Pick<typeof import('onnxruntime-node'), 'InferenceSession' | 'Tensor' | 'listSupportedBackends'>;

export interface OnnxBackendOptions {
  /** Defaults to importing onnxruntime-node, which loads its native binding on first use only. */
  readonly loadRuntime?: () => Promise<OrtRuntime>;
}

const BACKEND = 'onnxruntime';
const GRAPH_OPTIMIZATION_LEVELS = ['disabled', 'basic', 'extended', 'layout', 'all'] as const;
const KNOWN_OPTIONS = ['intraOpNumThreads', 'interOpNumThreads', 'graphOptimizationLevel', 'enableCpuMemArena', 'executionProviders', 'allowSpinning'];

type ExecutionProvider = InferenceSession.ExecutionProviderConfig;

export class OnnxBackend implements Backend {
  readonly name = BACKEND;
  readonly #loadRuntime: () => Promise<OrtRuntime>;
  #runtime: Promise<OrtRuntime> | undefined;

  constructor(options: OnnxBackendOptions = {}) {
    this.#loadRuntime = options.loadRuntime ?? (() => import('onnxruntime-node'));
  }

  async available(): Promise<true | string> {
    try {
      await this.#runtimeOnce();
      return true;
    } catch (err) {
      return onnxRuntimeLoadFailure(err);
    }
  }

  async load(source: string | Uint8Array, options: BackendLoadOptions = {}): Promise<OnnxSession> {
    let ort: OrtRuntime;
    try {
      ort = await this.#runtimeOnce();
    } catch (err) {
      throw createError('SF_ERR_BACKEND_UNAVAILABLE', BACKEND, onnxRuntimeLoadFailure(err), { cause: err });
    }
    const label = typeof source === 'string' ? source : `<${source.byteLength}-byte ONNX model>`;
    const sessionOptions = toSessionOptions(options.options ?? {}, label);
    // An explicit executionProviders option wins over the device, for providers serve-fn has no device kind for.
    sessionOptions.executionProviders = checkProviders(ort, sessionOptions.executionProviders ?? deviceProviders(options.device));
    let session: InferenceSession;
    try {
      // Two calls because create() is overloaded per source type, not declared on the union.
      session = typeof source === 'string'
        ? await ort.InferenceSession.create(source, sessionOptions)
        : await ort.InferenceSession.create(source, sessionOptions);
    } catch (err) {
      throw createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, (err as Error).message, { cause: err });
    }
    return new OnnxSession(session, ort.Tensor, label);
  }

  #runtimeOnce(): Promise<OrtRuntime> {
    this.#runtime ??= this.#loadRuntime();
    return this.#runtime;
  }
}

function toSessionOptions(options: Readonly<Record<string, unknown>>, label: string): InferenceSession.SessionOptions {
  const invalid = (key: string, wanted: string) =>
    createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, `option ${key} must be ${wanted}, got ${JSON.stringify(options[key])}.`);
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.includes(key)) {
      throw createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, `unknown option ${key}; ONNX Runtime options are ${KNOWN_OPTIONS.join(', ')}.`);
    }
  }
  const { intraOpNumThreads, interOpNumThreads, graphOptimizationLevel, enableCpuMemArena, executionProviders, allowSpinning } = options;
  const result: InferenceSession.SessionOptions = {};
  for (const [key, value] of [['intraOpNumThreads', intraOpNumThreads], ['interOpNumThreads', interOpNumThreads]] as const) {
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || (value as number) < 0) throw invalid(key, 'an integer >= 0 (0 lets ONNX Runtime choose)');
    result[key] = value as number;
  }
  if (graphOptimizationLevel !== undefined) {
    if (!GRAPH_OPTIMIZATION_LEVELS.includes(graphOptimizationLevel as never)) throw invalid('graphOptimizationLevel', `one of ${GRAPH_OPTIMIZATION_LEVELS.join(', ')}`);
    result.graphOptimizationLevel = graphOptimizationLevel as (typeof GRAPH_OPTIMIZATION_LEVELS)[number];
  }
  if (enableCpuMemArena !== undefined) {
    if (typeof enableCpuMemArena !== 'boolean') throw invalid('enableCpuMemArena', 'true or false');
    result.enableCpuMemArena = enableCpuMemArena;
  }
  if (allowSpinning !== undefined) {
    if (typeof allowSpinning !== 'boolean') throw invalid('allowSpinning', 'true or false');
    // ONNX Runtime's session config keys (onnxruntime_session_options_config_keys.h): with false, idle
    // pool threads sleep instead of spinning, which frees the cores for the process's other threads.
    const spin = allowSpinning ? '1' : '0';
    result.extra = { session: { intra_op: { allow_spinning: spin }, inter_op: { allow_spinning: spin } } };
  }
  if (executionProviders !== undefined) {
    const valid = Array.isArray(executionProviders) && executionProviders.every((p) => typeof p === 'string' || typeof (p as { name?: unknown })?.name === 'string');
    if (!valid) throw invalid('executionProviders', "a list of provider names or { name, ... } objects, e.g. [{ name: 'cuda', deviceId: 0 }, 'cpu']");
    result.executionProviders = executionProviders as ExecutionProvider[];
  }
  return result;
}

function deviceProviders(device: DeviceSpec | undefined): ExecutionProvider[] {
  if (device === undefined || device.kind === 'cpu') return ['cpu'];
  if (device.kind === 'gpu') return [{ name: 'cuda', deviceId: device.id }, 'cpu'];
  throw createError('SF_ERR_BACKEND_UNAVAILABLE', BACKEND, `device ${device.kind}:${device.id} cannot run ONNX models here; serve NPU models with the Ascend backend.`);
}

/** Refuses providers this onnxruntime-node cannot load, before ONNX Runtime fails with a vaguer message. */
function checkProviders(ort: OrtRuntime, providers: readonly ExecutionProvider[]): ExecutionProvider[] {
  const supported = ort.listSupportedBackends();
  for (const provider of providers) {
    const name = typeof provider === 'string' ? provider : provider.name;
    const entry = supported.find((b) => b.name === name);
    if (entry === undefined) {
      const names = supported.map((b) => b.name).join(', ');
      throw createError('SF_ERR_BACKEND_UNAVAILABLE', BACKEND, `execution provider '${name}' is not in this onnxruntime-node build (it has ${names}).`);
    }
    if (!entry.bundled && !providerLibraryInstalled(name)) {
      throw createError(
        'SF_ERR_BACKEND_UNAVAILABLE',
        BACKEND,
        // npm 11 runs a dependency's install script only when package.json's allowScripts approves it
        // (`npm help install-scripts`), and an explicit `false` there, as serve-fn's own, wins over approve.
        `the '${name}' execution provider library is not installed; onnxruntime-node's install script downloads it, which npm 11 runs only once approved: ` +
          "run `npm install-scripts approve onnxruntime-node` (remove a `false` entry for it from allowScripts in package.json first; npm 10 needs no approval), " +
          'then `ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node` (needs CUDA 12 and cuDNN 9).',
      );
    }
  }
  return [...providers];
}

/** Providers not bundled with onnxruntime-node (CUDA, TensorRT) are shared libraries its install script adds beside the binding. */
function providerLibraryInstalled(name: string): boolean {
  const packageDir = dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  const file = process.platform === 'win32'
    ? `onnxruntime_providers_${name}.dll`
    : `libonnxruntime_providers_${name}.${process.platform === 'darwin' ? 'dylib' : 'so'}`;
  return existsSync(join(packageDir, 'bin', 'napi-v6', process.platform, process.arch, file));
}
