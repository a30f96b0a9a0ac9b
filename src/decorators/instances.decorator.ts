import { recordInstances } from '../metadata/reflection.js';
import type { InstancesOptions } from '../metadata/records.js';

/**
 * How many copies of the model run, and where (Triton's instance_group). Each instance is a worker
 * thread with its own copy of the class; the default is one CPU instance.
 */
export function Instances(count: number, options: InstancesOptions = {}): ClassDecorator {
  return (target) => {
    recordInstances(target as unknown as new () => unknown, { count, options: { ...options } });
  };
}
