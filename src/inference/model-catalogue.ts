import { createError } from '../errors/index.js';
import type { InferenceModel, LoadRequest, ModelRepository, RepositoryIndexEntry } from './inference-model.js';

/** A model the server serves on its own, outside the repository: a @Model class, or a text model. */
export interface ServerModel extends InferenceModel {
  indexEntry(): RepositoryIndexEntry;
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
  ) {}

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
