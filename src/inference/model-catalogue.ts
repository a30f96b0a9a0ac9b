import { randomUUID } from 'node:crypto';
import type { InferOptions } from '../definition/model-context.js';
import { EXECUTE_METHOD } from '../definition/tensor-interface-builder.js';
import { createError, type ServeFnError } from '../errors/index.js';
import type { RequestTrace } from '../tracing/request-tracing.js';
import { validateDto } from '../validation/dto-validator.js';
import { DecoratedModel } from './decorated-model.js';
import type { InferenceModel, InferRequest, LoadRequest, ModelRepository, RepositoryIndexEntry } from './inference-model.js';

/** A model the server serves on its own, outside the repository: a @Model class, or a text model. */
export interface ServerModel extends InferenceModel {
  indexEntry(): RepositoryIndexEntry;
}

/** The server's own models of one kind, as they are registered with the catalogue. */
export interface OwnModels {
  /** What they are, for the error that names both sides of a clash: `@Model class`, `text model`, ... */
  readonly kind: string;
  readonly models: readonly ServerModel[];
  /** Whether several versions may share one name (a @Model class's versions); otherwise a name is one model. */
  readonly versioned?: boolean;
}

/**
 * Every model the server serves, as the inference protocols (HTTP /v2 and gRPC) look them up: its
 * own models (`@Model` classes, text models) beside the model repository's. An own model's name
 * hides a repository model of the same name, as it does for ctx.infer. Loading and unloading stay
 * the repository's; an own model lives as long as the server.
 */
export class ModelCatalogue implements ModelRepository {
  constructor(
    private readonly own: readonly ServerModel[],
    private readonly repository: ModelRepository,
    /** The kind each own model was registered as (of()), for the errors that name it. */
    private readonly kinds: ReadonlyMap<ServerModel, string> = new Map(),
  ) {}

  /**
   * The one place a served name is registered: every kind the server serves on its own (decorated,
   * text, generative, speech, image) in one list, a name taken once across them all, so no model
   * is left unreachable behind another of its name. Throws SF_ERR_MODEL_NAME_TAKEN naming both kinds.
   */
  static of(kinds: readonly OwnModels[], repository: ModelRepository): ModelCatalogue {
    const owners = new Map<string, { kind: OwnModels; versions: Set<string> }>();
    for (const kind of kinds) {
      for (const model of kind.models) {
        const { name, version } = model.info;
        const owner = owners.get(name);
        if (owner === undefined) owners.set(name, { kind, versions: new Set([version]) });
        else if (owner.kind !== kind || !kind.versioned || owner.versions.has(version)) throw createError('SF_ERR_MODEL_NAME_TAKEN', owner.kind.kind, kind.kind, name);
        else owner.versions.add(version);
      }
    }
    return new ModelCatalogue(kinds.flatMap((k) => k.models), repository, new Map(kinds.flatMap((k) => k.models.map((m) => [m, k.kind] as const))));
  }

  /**
   * Refuses a repository whose folder holds a model named as one of the server's own, which the
   * own model would hide from every entry point; called before the server starts.
   */
  async refuseRepositoryNames(): Promise<void> {
    for (const entry of await this.repository.index()) {
      const taken = this.takenFromRepository(entry.name);
      if (taken) throw taken;
    }
  }

  /** Why a repository model named `name` cannot be served (one of the server's own has the name), or undefined. */
  takenFromRepository(name: string): ServeFnError | undefined {
    const own = this.ownNamed(name);
    return own.length > 0 ? createError('SF_ERR_MODEL_NAME_TAKEN', 'repository model', this.kinds.get(own[0]!) ?? 'served model', name) : undefined;
  }

  get controlMode(): ModelRepository['controlMode'] {
    return this.repository.controlMode;
  }

  models(name?: string): readonly InferenceModel[] {
    if (name !== undefined) {
      const own = this.ownNamed(name);
      return own.length > 0 ? own : this.repository.models(name);
    }
    const names = new Set(this.own.map((m) => m.info.name));
    return byName([...this.own, ...this.repository.models().filter((m) => !names.has(m.info.name))], (m) => m.info.name);
  }

  get(name: string, version?: string): InferenceModel {
    const own = this.ownNamed(name);
    if (own.length === 0) return this.repository.get(name, version);
    if (version === undefined) return own[own.length - 1];
    const found = own.find((m) => m.info.version === version);
    if (!found) throw createError('SF_ERR_MODEL_VERSION_UNKNOWN', name, version);
    return found;
  }

  /**
   * ctx.infer: one model calling another through that model's queue, validated like an HTTP request.
   * The name resolves here, as /v2 and gRPC resolve it (a @Model class, a text, generative, speech
   * or image model, a repository model), so every entry point reaches the same models; a @Model
   * class is called by its `execute` tensor interface or by one of its endpoints. `trace` gives the
   * callee's spans a parent (TraceSettings.admit).
   */
  async call(model: string, input: unknown, options: InferOptions = {}, trace?: RequestTrace): Promise<unknown> {
    const request = (): InferRequest => (trace ? { ...(input as InferRequest), trace } : (input as InferRequest));
    const target = this.get(model, options.version);
    if (!(target instanceof DecoratedModel)) return target.infer(request());
    const runtime = target.runtime;
    const endpoints = runtime.definition.endpoints;
    // The tensor interface is the `execute` method; a class with nothing else needs no method named.
    if (runtime.definition.tensors && (options.method === EXECUTE_METHOD || (options.method === undefined && endpoints.length === 0))) {
      return target.infer(request());
    }
    const endpoint = options.method === undefined && endpoints.length === 1 ? endpoints[0] : endpoints.find((e) => e.methodName === options.method);
    if (!endpoint) {
      const names = endpoints.map((e) => e.methodName).join(', ');
      throw createError('SF_ERR_BAD_REQUEST', `ctx.infer('${model}'): name the method, one of ${names} (got ${options.method ?? 'none'})`);
    }
    if (endpoint.stream) throw createError('SF_ERR_BAD_REQUEST', `ctx.infer('${model}'): ${endpoint.id} streams its result, which ctx.infer cannot return`);
    const dto = endpoint.body ?? endpoint.query;
    const payload = dto ? await validateDto(dto, input, 'body') : input;
    // A call from a model is a request of its own: the caller's id stays in the caller's thread.
    return runtime.submit(endpoint.methodName, { payload, info: { requestId: randomUUID(), params: {}, query: {}, headers: {} } }, trace ? { trace } : {});
  }

  async index(options: { readyOnly?: boolean } = {}): Promise<readonly RepositoryIndexEntry[]> {
    const names = new Set(this.own.map((m) => m.info.name));
    const own = this.own.map((m) => m.indexEntry());
    const entries = byName([...own, ...(await this.repository.index()).filter((e) => !names.has(e.name))], (e) => e.name);
    return options.readyOnly ? entries.filter((e) => e.state === 'READY') : entries;
  }

  async load(name: string, request?: LoadRequest): Promise<void> {
    this.refuseOwn(name);
    await this.repository.load(name, request);
  }

  async unload(name: string): Promise<void> {
    this.refuseOwn(name);
    await this.repository.unload(name);
  }

  private ownNamed(name: string): readonly ServerModel[] {
    return this.own.filter((m) => m.info.name === name);
  }

  private refuseOwn(name: string): void {
    if (this.ownNamed(name).length > 0) throw createError('SF_ERR_MODEL_NOT_IN_REPOSITORY', name);
  }
}

/** Ordered by name; a stable sort keeps each model's versions in their order. */
function byName<T>(items: T[], nameOf: (item: T) => string): T[] {
  return items.sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0));
}
