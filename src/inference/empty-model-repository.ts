import { createError } from '../errors/index.js';
import type { InferenceModel, ModelRepository, RepositoryIndexEntry } from './inference-model.js';

/**
 * The repository of a server that serves decorated models only: the inference protocol's health,
 * metadata and index routes still answer (Kubernetes probes use /v2/health/*), with no models.
 * It keeps the server's --model-control-mode, so that in `explicit` mode a load or unload of the
 * server's own models gets their 400 (ModelCatalogue) rather than the 503 of a server that
 * controls nothing, and any other name is unknown, as in a Triton repository without that model.
 */
export class EmptyModelRepository implements ModelRepository {
  constructor(readonly controlMode: ModelRepository['controlMode'] = 'none') {}

  models(): readonly InferenceModel[] {
    return [];
  }

  get(name: string): InferenceModel {
    throw createError('SF_ERR_MODEL_UNKNOWN', name);
  }

  async index(): Promise<readonly RepositoryIndexEntry[]> {
    return [];
  }

  async load(name: string): Promise<void> {
    this.requireExplicit();
    throw createError('SF_ERR_MODEL_POLL_FAILED', name, 'the server serves no model repository');
  }

  async unload(name: string): Promise<void> {
    this.requireExplicit();
    throw createError('SF_ERR_MODEL_UNKNOWN', name);
  }

  private requireExplicit(): void {
    if (this.controlMode !== 'explicit') throw createError('SF_ERR_MODEL_CONTROL_DISABLED');
  }
}
