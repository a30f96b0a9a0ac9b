import { recordGenerativeModel } from '../metadata/reflection.js';
import type { GenerativeModelDeclaration } from '../metadata/records.js';

/**
 * Makes a model class a generator: serve-fn tokenizes, applies the folder's chat template,
 * schedules (continuous batching), samples, stops, detokenizes and serves the OpenAI / vLLM routes
 * and KServe v2 generate, as for a decoder export folder, while the class computes next-token
 * logits in its instances through its step hook: `step(rows)` and `release(sequenceIds)`
 * (DecoderStepHook), with a KV cache of its own keyed by sequence id.
 */
export function GenerativeModel(options: GenerativeModelDeclaration): ClassDecorator {
  return (target) => {
    recordGenerativeModel(target as unknown as new () => unknown, { options: { ...options } });
  };
}
