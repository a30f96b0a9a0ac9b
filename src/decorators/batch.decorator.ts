import { readMethodParamTypes, recordBatch } from '../metadata/reflection.js';
import type { BatchPolicyInput } from '../spec/batch-policy.js';

/**
 * Dynamic batching for an endpoint: the method receives an array of requests and returns an array
 * of the same length, in which an `Error` fails only its own request. `@Batch(8, 5000)` is
 * `{ maxBatchSize: 8, maxQueueDelayUs: 5000 }`; the object form takes every Triton option.
 */
export function Batch(maxBatchSize: number, maxQueueDelayUs?: number): MethodDecorator;
export function Batch(policy: BatchPolicyInput): MethodDecorator;
export function Batch(first: number | BatchPolicyInput, maxQueueDelayUs = 0): MethodDecorator {
  const policy: BatchPolicyInput = typeof first === 'number' ? { maxBatchSize: first, maxQueueDelayUs } : { ...first };
  return (prototype, propertyKey) => {
    const paramTypes = readMethodParamTypes(prototype, String(propertyKey));
    recordBatch(prototype.constructor as new () => unknown, {
      method: String(propertyKey),
      policy,
      firstParamType: paramTypes?.[0],
      metadataEmitted: paramTypes !== undefined,
    });
  };
}
