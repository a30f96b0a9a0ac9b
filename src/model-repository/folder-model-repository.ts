import { join } from 'node:path';
import { createError, statusOf } from '../errors/index.js';
import type { ModelResolver } from '../inference/ensemble-model.js';
import type { InferenceModel, InferRequest, LoadRequest, ModelRepository, RepositoryIndexEntry } from '../inference/inference-model.js';
import type { ServedModel, UnloadOptions } from '../inference/served-model.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import type { InferCall } from '../instance/context-services.js';
import type { RestartPolicy } from '../spec/restart-policy.js';
import { buildModelVersions, type TensorInstanceFactory, type VersionBuilderContext } from './model-version-builder.js';
import { readModelSource, type ModelSource } from './model-source.js';
import { writeOverrideFolder, type OverrideFolder } from './override-files.js';
import { folderFingerprint, listModelFolders } from './repository-scan.js';

export type ModelControlMode = ModelRepository['controlMode'];

export interface FolderModelRepositoryOptions {
  readonly root: string;
  /** Triton's --model-control-mode (Triton's user_guide/model_management.md); 'none' by default. */
  readonly controlMode?: ModelControlMode;
  /** Explicit mode: the models loaded at start (Triton's --load-model); '*' loads every model. */
  readonly startupModels?: readonly string[];
  /** Poll mode: how often the folder is scanned for changes (Triton's --repository-poll-secs, 15 s). */
  readonly pollIntervalMs?: number;
  readonly recorder: InferenceRecorder;
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** `ctx.infer` of model.ts instances; by default it calls this repository's models. */
  readonly infer?: InferCall;
  /** The models ensemble steps name; by default this repository's. */
  readonly resolve?: ModelResolver;
  readonly restartPolicy?: RestartPolicy;
  /** Most instances of one model version a config may ask for (--max-instances); DEFAULT_MAX_INSTANCES by default. */
  readonly maxInstances?: number;
  readonly instanceFactory?: TensorInstanceFactory;
  /**
   * Why a folder's name cannot be served from the repository (a model the server serves otherwise
   * has it), or undefined. Poll mode leaves such a folder unloaded, its index entry saying why; at
   * start and on explicit loads the server refuses the name itself (ModelCatalogue).
   */
  readonly takenName?: (name: string) => Error | undefined;
}

interface ModelRecord {
  state: 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';
  reason?: string;
  /** The versions served now, ascending; kept while a reload is loading, and after a failed one. */
  versions: readonly ServedModel[];
  /** The folder as last read (poll mode). */
  fingerprint?: string;
  /** The temporary folder of a load request that sent files. */
  override?: OverrideFolder;
}

const DEFAULT_POLL_INTERVAL_MS = 15_000;

/**
 * A Triton model repository on disk (Triton's user_guide/model_management.md). In `none` mode every model is loaded at
 * start; in `explicit` mode the startup models, then whatever load() asks for; in `poll` mode every
 * model, and the folder is rescanned to load new, reload changed and unload removed models (a failed
 * reload keeps the old versions serving). Ensembles load after the models they use. Loads and
 * unloads of one model run one after another.
 */
export class FolderModelRepository implements ModelRepository {
  readonly controlMode: ModelControlMode;
  private readonly records = new Map<string, ModelRecord>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly builder: VersionBuilderContext;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  constructor(private readonly options: FolderModelRepositoryOptions) {
    this.controlMode = options.controlMode ?? 'none';
    const log = options.log ?? (() => undefined);
    this.builder = {
      recorder: options.recorder,
      log,
      infer: options.infer ?? ((model, input, call) => this.get(model, call.version).infer(input as InferRequest)),
      resolve: options.resolve ?? ((name, version) => this.get(name, version)),
      restartPolicy: options.restartPolicy,
      maxInstances: options.maxInstances,
      instanceFactory: options.instanceFactory,
    };
  }

  /** Loads the startup models; the first failure stops everything and is thrown, as Triton's --exit-on-error does. */
  async start(): Promise<void> {
    const all = listModelFolders(this.options.root);
    const wanted = this.options.startupModels ?? [];
    const names = this.controlMode !== 'explicit' || wanted.includes('*') ? all : wanted.map((name) => checkName(name));
    if (this.controlMode === 'poll') for (const name of names) this.recordOf(name).fingerprint = folderFingerprint(join(this.options.root, name));
    const errors = await this.loadAll(names);
    if (errors.length > 0) {
      await this.close();
      throw errors[0];
    }
    if (this.controlMode === 'poll') {
      const every = this.options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
      this.pollTimer = setInterval(() => void this.poll().catch((err: Error) => this.builder.log('error', err.message)), every).unref();
    }
  }

  /** Rescans the folder once (poll mode runs this on its interval); models that fail to load are logged, not thrown. */
  poll(): Promise<void> {
    this.polling ??= this.rescan().finally(() => (this.polling = undefined));
    return this.polling;
  }

  /** Unloads every model, letting in-flight requests finish; response streams still open after `streamTimeoutMs` are cancelled. */
  async close(options: UnloadOptions = {}): Promise<void> {
    clearInterval(this.pollTimer);
    await this.polling?.catch(() => undefined);
    await Promise.all([...this.records].map(([name, record]) => this.locked(name, () => this.unloadRecord(record, options))));
  }

  models(name?: string): readonly InferenceModel[] {
    if (name !== undefined) return this.records.get(name)?.versions ?? [];
    return [...this.records.keys()].sort().flatMap((key) => this.records.get(key)!.versions);
  }

  get(name: string, version?: string): InferenceModel {
    const versions = this.records.get(name)?.versions ?? [];
    if (versions.length === 0) throw createError('SF_ERR_MODEL_UNKNOWN', name);
    if (version === undefined) return versions[versions.length - 1];
    const found = versions.find((v) => v.info.version === version);
    if (!found) throw createError('SF_ERR_MODEL_VERSION_UNKNOWN', name, version);
    return found;
  }

  /** Triton's repository index: a model never loaded is UNKNOWN, a served one has an entry per version. */
  async index(options: { readyOnly?: boolean } = {}): Promise<readonly RepositoryIndexEntry[]> {
    let folders: string[] = [];
    try {
      folders = listModelFolders(this.options.root);
    } catch {
      // The folder went away: the index still lists what is loaded.
    }
    const entries: RepositoryIndexEntry[] = [];
    for (const name of [...new Set([...folders, ...this.records.keys()])].sort()) {
      const record = this.records.get(name);
      if (!record) entries.push({ name, state: 'UNKNOWN' });
      else if (record.versions.length === 0) entries.push(record.reason === undefined ? { name, state: record.state } : { name, state: record.state, reason: record.reason });
      else {
        for (const model of record.versions) {
          const state = record.state === 'UNLOADING' ? 'UNLOADING' : model.ready() ? 'READY' : 'UNAVAILABLE';
          entries.push({ name, version: model.info.version, state });
        }
      }
    }
    return options.readyOnly ? entries.filter((e) => e.state === 'READY') : entries;
  }

  /**
   * Loads or reloads a model (explicit mode). `config` replaces config.pbtxt; `files` replace the
   * whole model folder (Triton's override: `config` is then required).
   */
  async load(name: string, request: LoadRequest = {}): Promise<void> {
    this.requireExplicit();
    checkName(name);
    const files = request.files ?? {};
    const hasFiles = Object.keys(files).length > 0;
    if (hasFiles && request.config === undefined) {
      throw createError('SF_ERR_BAD_REQUEST', `load of '${name}': file parameters replace the model folder, so a config parameter must come with them`);
    }
    let override: OverrideFolder | undefined;
    let source: ModelSource;
    try {
      override = hasFiles ? writeOverrideFolder(name, files) : undefined;
      source = readModelSource(this.options.root, name, override?.dir ?? join(this.options.root, name), request.config);
    } catch (err) {
      this.discard(override);
      const failure = pollFailure(name, err as Error);
      this.markFailed(this.recordOf(name), name, failure);
      throw failure;
    }
    const error = await this.loadSource(source, override);
    if (error) throw override ? sentContentFailure(name, error, override.dir) : error;
  }

  /** Unloads a model (explicit mode) once its in-flight requests finish; a model not loaded is left as is. */
  async unload(name: string): Promise<void> {
    this.requireExplicit();
    checkName(name);
    const record = this.records.get(name);
    if (!record && !listModelFolders(this.options.root).includes(name)) throw createError('SF_ERR_MODEL_UNKNOWN', name);
    if (record) await this.locked(name, () => this.unloadRecord(record));
  }

  private async rescan(): Promise<void> {
    const names = listModelFolders(this.options.root);
    for (const [name, record] of this.records) {
      if (!names.includes(name) && !record.override) {
        this.builder.log('info', `model folder '${name}' was removed; unloading it`);
        await this.locked(name, () => this.unloadRecord(record));
        this.records.delete(name);
      }
    }
    const changed: string[] = [];
    for (const name of names) {
      const fingerprint = folderFingerprint(join(this.options.root, name));
      if (this.records.get(name)?.fingerprint === fingerprint) continue;
      this.recordOf(name).fingerprint = fingerprint;
      const taken = this.options.takenName?.(name);
      if (taken) {
        this.markFailed(this.recordOf(name), name, taken);
        this.builder.log('error', taken.message);
      } else {
        changed.push(name);
      }
    }
    for (const err of await this.loadAll(changed)) this.builder.log('error', err.message);
  }

  /** Loads models from their folders: models first, then ensembles after the ensembles they use. */
  private async loadAll(names: readonly string[]): Promise<Error[]> {
    const errors: Error[] = [];
    const sources: ModelSource[] = [];
    for (const name of names) {
      try {
        sources.push(readModelSource(this.options.root, name, join(this.options.root, name)));
      } catch (err) {
        this.markFailed(this.recordOf(name), name, err as Error);
        errors.push(err as Error);
      }
    }
    const results = await Promise.all(sources.filter((s) => s.kind !== 'ensemble').map((s) => this.loadSource(s)));
    for (const ensemble of ensembleLoadOrder(sources.filter((s) => s.kind === 'ensemble'))) results.push(await this.loadSource(ensemble));
    return [...errors, ...results.filter((r): r is Error => r !== undefined)];
  }

  /** Loads every version, then swaps them in and unloads the old ones; resolves to the error of a failed load. */
  private loadSource(source: ModelSource, override?: OverrideFolder): Promise<Error | undefined> {
    return this.locked(source.name, async () => {
      const record = this.recordOf(source.name);
      if (record.versions.length === 0) record.state = 'LOADING';
      for (const warning of source.warnings) this.builder.log('warn', warning);
      let versions: ServedModel[];
      try {
        versions = await buildModelVersions(source, this.builder);
        await loadEvery(versions);
      } catch (err) {
        this.discard(override);
        this.markFailed(record, source.name, err as Error);
        return err as Error;
      }
      const previous = record.versions;
      const previousOverride = record.override;
      Object.assign(record, { versions, state: 'READY', reason: undefined, override });
      await Promise.allSettled(previous.map((v) => v.unload()));
      this.discard(previousOverride);
      this.builder.log('info', `loaded model '${source.name}' version ${versions.map((v) => v.info.version).join(', ')}`);
      return undefined;
    });
  }

  private async unloadRecord(record: ModelRecord, options: UnloadOptions = {}): Promise<void> {
    if (record.versions.length === 0) return;
    record.state = 'UNLOADING';
    await Promise.allSettled(record.versions.map((v) => v.unload(options)));
    Object.assign(record, { versions: [], state: 'UNAVAILABLE', reason: 'unloaded' });
    this.discard(record.override);
    record.override = undefined;
  }

  /** A temporary folder that cannot be removed is logged: the load or unload it belonged to has happened. */
  private discard(override: OverrideFolder | undefined): void {
    try {
      override?.remove();
    } catch (err) {
      this.builder.log('error', `could not remove the temporary model folder ${override!.dir}: ${(err as Error).message}`);
    }
  }

  private markFailed(record: ModelRecord, name: string, err: Error): void {
    if (record.versions.length > 0) {
      this.builder.log('error', `reload of model '${name}' failed; the loaded versions keep serving: ${err.message}`);
      return;
    }
    Object.assign(record, { state: 'UNAVAILABLE', reason: err.message });
  }

  private recordOf(name: string): ModelRecord {
    let record = this.records.get(name);
    if (!record) this.records.set(name, (record = { state: 'LOADING', versions: [] }));
    return record;
  }

  /** Runs `task` after every earlier task on the same model, whatever their outcome. */
  private locked<T>(name: string, task: () => Promise<T>): Promise<T> {
    const run = (this.locks.get(name) ?? Promise.resolve()).then(task, task);
    this.locks.set(name, run.catch(() => undefined));
    return run;
  }

  private requireExplicit(): void {
    if (this.controlMode !== 'explicit') throw createError('SF_ERR_MODEL_CONTROL_DISABLED');
  }
}

/**
 * A load request naming a model the repository cannot read (no such folder, a config that does not
 * parse or fit, bad file names) is refused in Triton's words, which its clients match
 * (model_repository_manager.cc), with the reason after them. Server-side failures (files that
 * cannot be written, a backend serve-fn lacks) keep their own code and status.
 */
function pollFailure(name: string, err: Error): Error {
  if (statusOf(err) >= 500) return err;
  return createError('SF_ERR_MODEL_POLL_FAILED', name, err.message, { cause: err });
}

/**
 * A load request whose files the backend cannot load (not an ONNX model, say) failed on the
 * client's content: 400 with the backend's reason, as Triton answers a failed load
 * (INVALID_ARG, "load failed for model ..."), its paths shown inside the model folder the client
 * sent rather than the server's temporary folder. Other failures keep their own code and status.
 */
function sentContentFailure(name: string, err: Error, dir: string): Error {
  if ((err as { code?: string }).code !== 'SF_ERR_BACKEND_LOAD_FAILED') return err;
  return createError('SF_ERR_MODEL_LOAD_FAILED', name, err.message.split(dir).join(name), { cause: err });
}

/** Linux's NAME_MAX: a longer model name cannot be a folder. */
const MAX_MODEL_NAME_BYTES = 255;

/** A model name is one folder name: no separators, not `.` or `..`, and no longer than a file name may be. */
function checkName(name: string): string {
  if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name) || Buffer.byteLength(name) > MAX_MODEL_NAME_BYTES) {
    throw createError('SF_ERR_BAD_REQUEST', `'${name}' is not a model name: a model name is the name of one folder in the repository`);
  }
  return name;
}

/** Every version loads, or none stays loaded. */
async function loadEvery(versions: readonly ServedModel[]): Promise<void> {
  const results = await Promise.allSettled(versions.map((v) => v.load()));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failed) return;
  await Promise.allSettled(versions.filter((_, i) => results[i].status === 'fulfilled').map((v) => v.unload()));
  throw failed.reason;
}

/** Ensembles that use other ensembles of the list come after them; a cycle keeps list order (and fails validation). */
function ensembleLoadOrder(ensembles: readonly ModelSource[]): ModelSource[] {
  const byName = new Map(ensembles.map((s) => [s.name, s]));
  const ordered: ModelSource[] = [];
  const visiting = new Set<string>();
  const visit = (source: ModelSource): void => {
    if (ordered.includes(source) || visiting.has(source.name)) return;
    visiting.add(source.name);
    for (const step of source.config.ensemble_scheduling?.step ?? []) {
      const dependency = byName.get(step.model_name);
      if (dependency) visit(dependency);
    }
    ordered.push(source);
  };
  ensembles.forEach(visit);
  return ordered;
}
