import { injectable } from 'tsyringe';
import { recordModel } from '../metadata/reflection.js';
import type { ModelOptions } from '../metadata/records.js';

/**
 * Marks a class as a served model (Triton's `TritonPythonModel`). The class becomes injectable, so
 * its constructor dependencies are resolved by tsyringe in every instance.
 */
export function Model(options: ModelOptions): ClassDecorator {
  return (target) => {
    injectable()(target as unknown as new (...args: unknown[]) => unknown);
    recordModel(target as unknown as new () => unknown, { className: target.name, options: { ...options } });
  };
}
