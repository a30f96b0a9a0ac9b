import { createError } from '../errors/index.js';
import type { ModelVersionPolicy } from './model-config.js';

/**
 * The versions Triton serves out of the `available` version folders: the newest N (`latest`,
 * the default with N = 1), every one (`all`), or those listed (`specific`, each of which must
 * exist). Ascending; throws SF_ERR_CONFIG_INVALID naming the model when the policy cannot be met.
 */
export function selectVersions(model: string, policy: ModelVersionPolicy, available: readonly number[]): number[] {
  const sorted = [...available].sort((a, b) => a - b);
  if ('all' in policy) return sorted;
  if ('specific' in policy) {
    const wanted = [...new Set(policy.specific.versions)].sort((a, b) => a - b);
    if (wanted.length === 0) throw createError('SF_ERR_CONFIG_INVALID', model, 'version_policy specific lists no versions');
    const missing = wanted.filter((v) => !sorted.includes(v));
    if (missing.length > 0) {
      throw createError('SF_ERR_CONFIG_INVALID', model, `version_policy specific asks for version ${missing.join(', ')}, but the model folder has ${describe(sorted)}`);
    }
    return wanted;
  }
  const count = policy.latest.num_versions;
  if (count < 1) throw createError('SF_ERR_CONFIG_INVALID', model, 'version_policy latest needs num_versions >= 1');
  return sorted.slice(-count);
}

function describe(versions: readonly number[]): string {
  return versions.length === 0 ? 'no version folders' : `versions ${versions.join(', ')}`;
}
