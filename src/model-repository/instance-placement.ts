import { createError } from '../errors/index.js';
import type { TensorModelKind } from '../wire/tensor-model-plan.js';
import type { RestartPolicy } from '../spec/restart-policy.js';
import { parseRestartLimit, RESTART_LIMIT_FORM } from '../definition/restart-limit.js';
import { geDeviceIds, geExecBlocks } from './ge-parameters.js';
import type { ModelConfig } from './model-config.js';

export interface InstancePlacement {
  /** Triton's instance name: `<group name>_<n>`, n counting within the group. */
  readonly name: string;
  readonly kind: 'cpu' | 'gpu' | 'npu';
  readonly id: number;
  /** npu_ge: the instance's GE execution slots. */
  readonly slots?: number;
}

/**
 * Most instances of one model version a configuration may ask for, unless the server sets its own
 * (--max-instances, SERVE_FN_MAX_INSTANCES). Each instance is a worker thread with its own session
 * (about 3 threads and 70 MB for the examples' models), and on the CPU more instances than cores
 * only queue on the same cores: 8 is twice the cores of a generous serve-fn pod, while Triton,
 * which has no ceiling, lets one config.pbtxt `count` exhaust the process.
 */
export const DEFAULT_MAX_INSTANCES = 8;

/**
 * Where each instance of a model runs, from its instance_group list (normalised by the config
 * parser, so every group has a name and a count >= 1). As in Triton, `count` instances run on each
 * device a group lists. KIND_GPU groups use CUDA devices `gpus` (default 0); KIND_CPU, KIND_AUTO
 * and KIND_MODEL run on the CPU (serve-fn does not probe for GPUs); serve-fn's KIND_NPU groups on
 * Ascend NPUs `gpus` (default 0), which makes an ONNX file npu_ge (model-source.ts). npu_om and npu_ge models
 * always run on Ascend NPUs, the group's `gpus` naming NPU ids (default 0); an npu_ge model's
 * `device_ids` parameter overrides them (gePlacements).
 */
export function instancePlacements(config: ModelConfig, kind: TensorModelKind, maxInstances = DEFAULT_MAX_INSTANCES): InstancePlacement[] {
  const placements = kind === 'npu_ge' ? gePlacements(config) : tritonPlacements(config, kind === 'npu_om');
  if (placements.length > maxInstances) {
    const asked = config.instance_group.map((g) => `${g.count}${g.gpus.length > 1 ? ` × ${g.gpus.length} devices` : ''}`).join(' + ');
    throw createError('SF_ERR_CONFIG_INVALID', config.name, `instance_group asks for ${placements.length} instances (${asked}); this server runs at most ${maxInstances} per model version (--max-instances, SERVE_FN_MAX_INSTANCES)`);
  }
  return placements;
}

function tritonPlacements(config: ModelConfig, onNpu: boolean): InstancePlacement[] {
  return config.instance_group.flatMap((group) => {
    const device = onNpu || group.kind === 'KIND_NPU' ? 'npu' : group.kind === 'KIND_GPU' ? 'gpu' : 'cpu';
    const ids = device === 'cpu' || group.gpus.length === 0 ? [0] : group.gpus;
    let n = 0;
    return ids.flatMap((id) => Array.from({ length: group.count }, () => ({ name: `${group.name}_${n++}`, kind: device, id })));
  });
}

/**
 * npu_ge instances as Huawei's Triton GE backend spreads its work (src/model_instance_state.cpp,
 * CalculateDeviceExecBlock): with `device_ids`, the instances go round-robin over those NPUs, and
 * every listed NPU gets at least one instance (more are added to the last group), since the GE
 * backend runs exec blocks on each NPU it lists. Each NPU gets that backend's number of exec
 * blocks, `device_exec_blocks`, else ceil(instances × instance_exec_blocks (default 1) / NPUs),
 * where instances is the instance_group count; the instances on an NPU share its blocks as evenly
 * as they can, one at least each.
 */
function gePlacements(config: ModelConfig): InstancePlacement[] {
  const listed = geDeviceIds(config);
  let placements = tritonPlacements(config, true);
  if (listed) {
    const names = config.instance_group.flatMap((group) => Array.from({ length: group.count }, (_, n) => `${group.name}_${n}`));
    const last = config.instance_group[config.instance_group.length - 1];
    for (let n = last.count; names.length < listed.length; n++) names.push(`${last.name}_${n}`);
    placements = names.map((name, i) => ({ name, kind: 'npu', id: listed[i % listed.length] }));
  }
  const devices = [...new Set(placements.map((p) => p.id))];
  const instances = config.instance_group.reduce((sum, group) => sum + group.count, 0);
  const blocks = geExecBlocks(config);
  const perDevice = blocks.device ?? Math.ceil((instances * (blocks.instance ?? 1)) / devices.length);
  const seen = new Map<number, number>();
  return placements.map((placement) => {
    const index = seen.get(placement.id) ?? 0;
    seen.set(placement.id, index + 1);
    const sharing = placements.filter((p) => p.id === placement.id).length;
    const slots = Math.max(1, Math.floor(perDevice / sharing) + (index < perDevice % sharing ? 1 : 0));
    return { ...placement, slots };
  });
}

/**
 * ONNX Runtime session options from the parameters Triton's onnxruntime backend reads:
 * intra_op_thread_count (default 1 here, where ONNX Runtime would take every core: each instance
 * is its own thread already, and several instances each using all cores would fight over them),
 * inter_op_thread_count and enable_mem_arena.
 */
export function sessionOptionsFromParameters(config: Pick<ModelConfig, 'name' | 'parameters'>): Record<string, unknown> {
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

/** The model's `restart_limit` parameter (`'<restarts>/<window>'`), which wins over the server's; undefined without one. */
export function restartPolicyFromParameters(config: ModelConfig): RestartPolicy | undefined {
  const text = config.parameters.restart_limit?.string_value;
  if (text === undefined) return undefined;
  const policy = parseRestartLimit(text);
  if (!policy) throw createError('SF_ERR_CONFIG_INVALID', config.name, `parameter restart_limit must be ${RESTART_LIMIT_FORM}, got '${text}'`);
  return policy;
}
