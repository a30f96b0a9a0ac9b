import { createError } from '../errors/index.js';
import type { TensorModelKind } from '../inference/tensor-model-plan.js';
import type { ModelConfig } from './model-config.js';

export interface InstancePlacement {
  /** Triton's instance name: `<group name>_<n>`, n counting within the group. */
  readonly name: string;
  readonly kind: 'cpu' | 'gpu' | 'npu';
  readonly id: number;
}

/**
 * Where each instance of a model runs, from its instance_group list (normalised by the config
 * parser, so every group has a name and a count >= 1). As in Triton, `count` instances run on each
 * device a group lists. KIND_GPU groups use CUDA devices `gpus` (default 0); KIND_CPU, KIND_AUTO
 * and KIND_MODEL run on the CPU (serve-fn does not probe for GPUs). npu_om models always run on
 * Ascend NPUs, the group's `gpus` naming NPU ids (default 0).
 */
export function instancePlacements(config: ModelConfig, kind: TensorModelKind): InstancePlacement[] {
  return config.instance_group.flatMap((group) => {
    const device = kind === 'npu_om' ? 'npu' : group.kind === 'KIND_GPU' ? 'gpu' : 'cpu';
    const ids = device === 'cpu' || group.gpus.length === 0 ? [0] : group.gpus;
    let n = 0;
    return ids.flatMap((id) => Array.from({ length: group.count }, () => ({ name: `${group.name}_${n++}`, kind: device, id })));
  });
}

/**
 * ONNX Runtime session options from the parameters Triton's onnxruntime backend reads:
 * intra_op_thread_count (default 1 here, where ONNX Runtime would take every core: each instance
 * is its own thread already, and several instances each using all cores would fight over them),
 * inter_op_thread_count and enable_mem_arena.
 */
export function sessionOptionsFromParameters(config: ModelConfig): Record<string, unknown> {
  const value = (key: string): string | undefined => config.parameters[key]?.string_value;
  const count = (key: string): number | undefined => {
    const text = value(key);
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text.trim())) throw createError('SF_ERR_CONFIG_INVALID', config.name, `parameter ${key} must be a whole number, got '${text}'`);
    return Number(text);
  };
  const options: Record<string, unknown> = { intraOpNumThreads: count('intra_op_thread_count') ?? 1 };
  const inter = count('inter_op_thread_count');
  if (inter !== undefined) options.interOpNumThreads = inter;
  const arena = value('enable_mem_arena');
  if (arena !== undefined) {
    if (!['true', 'false', '1', '0'].includes(arena.trim().toLowerCase())) {
      throw createError('SF_ERR_CONFIG_INVALID', config.name, `parameter enable_mem_arena must be true or false, got '${arena}'`);
    }
    options.enableCpuMemArena = ['true', '1'].includes(arena.trim().toLowerCase());
  }
  return options;
}
