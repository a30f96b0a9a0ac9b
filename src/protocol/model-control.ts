import { createError } from '../errors/index.js';
import type { LoadRequest, ModelRepository, RepositoryIndexEntry } from '../inference/inference-model.js';

/**
 * Triton's model repository extension (extension_model_repository.md; user_guide/model_management.md)
 * as both transports drive it: the index in every control mode; load and unload only in `explicit`
 * mode, refused otherwise with Triton's 503 and message. Each transport reads its own parameter
 * encoding (JSON with base64 files over HTTP, typed ModelRepositoryParameter over gRPC) into these.
 */

export function repositoryIndex(repository: ModelRepository, readyOnly: boolean): Promise<readonly RepositoryIndexEntry[]> {
  return repository.index({ readyOnly });
}

export async function loadModel(repository: ModelRepository, name: string, request: LoadRequest): Promise<void> {
  if (repository.controlMode !== 'explicit') throw createError('SF_ERR_MODEL_CONTROL_DISABLED');
  await repository.load(name, request);
}

/** `unloadDependents` is Triton's `unload_dependents` parameter, already read as a boolean. */
export async function unloadModel(repository: ModelRepository, name: string, unloadDependents: boolean): Promise<void> {
  if (unloadDependents) throw createError('SF_ERR_UNSUPPORTED', "'unload_dependents' is not supported: unload the dependent models one by one");
  if (repository.controlMode !== 'explicit') throw createError('SF_ERR_MODEL_CONTROL_DISABLED');
  await repository.unload(name);
}

/** How a transport reads the value of a load parameter: `config` as text, `file:` ones as bytes. */
export interface LoadParameterReader<V> {
  config(key: string, value: V): string;
  file(key: string, value: V): Uint8Array;
}

/** Triton's load parameters: `config` (a model configuration as JSON) and `file:<version>/<file name>`. */
export function readLoadParameters<V>(parameters: Iterable<readonly [string, V]>, read: LoadParameterReader<V>): LoadRequest {
  let config: string | undefined;
  const files: Record<string, Uint8Array> = {};
  for (const [key, value] of parameters) {
    if (key === 'config') {
      config = read.config(key, value);
    } else if (key.startsWith('file:') && key.length > 'file:'.length) {
      files[key] = read.file(key, value);
    } else {
      throw createError('SF_ERR_BAD_REQUEST', `Unexpected load parameter '${key}': use 'config' or 'file:<version>/<file name>'.`);
    }
  }
  return { ...(config === undefined ? {} : { config }), ...(Object.keys(files).length === 0 ? {} : { files }) };
}
