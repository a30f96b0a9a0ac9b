import { createError } from '../errors/index.js';
import type { InferenceModel, ModelRepository, RepositoryIndexEntry } from './inference-model.js';

/**
 * The repository of a server that serves decorated models only: the inference protocol's health,
 * metadata and index routes still answer (Kubernetes probes use /v2/health/*), with no models.
 */
export class EmptyModelRepository implements ModelRepository {
  readonly controlMode = 'none' as const;

  models(): readonly InferenceModel[] {
    return [];
  }

  get(name: string): InferenceModel {
    throw createError('SF_ERR_MODEL_UNKNOWN', name);
  }

  async index(): Promise<readonly RepositoryIndexEntry[]> {
    return [];
  }

  async load(): Promise<void> {
    throw createError('SF_ERR_MODEL_CONTROL_DISABLED');
  }

  async unload(): Promise<void> {
    throw createError('SF_ERR_MODEL_CONTROL_DISABLED');
  }
}
