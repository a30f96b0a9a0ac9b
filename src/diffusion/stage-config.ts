import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createError } from '../errors/index.js';
import { buildModelConfig, type ModelConfig } from '../model-repository/model-config.js';
import { checkGeParameters } from '../model-repository/ge-parameters.js';
import { backendNames, kindOfFile, placedOnNpu } from '../model-repository/model-source.js';
import { parsePbtxt } from '../model-repository/pbtxt-parser.js';
import type { TensorModelKind } from '../wire/tensor-model-plan.js';

/** What a stage folder's config.pbtxt may set; the rest of a stage's configuration is the pipeline's. */
const STAGE_FIELDS: ReadonlySet<string> = new Set(['instance_group', 'parameters']);

/**
 * A stage's own placement, as a Triton user writes it for any model: an optional `config.pbtxt`
 * in the stage's folder (`text_encoder/`, `transformer/` or `unet/`, `vae_decoder/`) with
 * `instance_group` (count, KIND_CPU / KIND_GPU and `gpus`, Triton's model_config.proto, or
 * serve-fn's KIND_NPU) and `parameters` (ONNX Runtime's `intra_op_thread_count`,
 * `inter_op_thread_count`, `enable_mem_arena`, as Triton's onnxruntime backend reads them; on an
 * NPU, Huawei's GE backend's). This is the per-stage `runtime.devices` / replica count of
 * vLLM-Omni's stage configuration
 * (https://docs.vllm.ai/projects/vllm-omni/en/latest/configuration/stage_configs/), in the form a
 * model repository already uses. Other fields are refused: the pipeline sets the stage's tensors,
 * batching and backend. The pipeline's own parameters win over the file's.
 */
export function withStageConfig(config: ModelConfig, stageDir: string, stageName: string): ModelConfig {
  const file = join(stageDir, 'config.pbtxt');
  if (!existsSync(file)) return config;
  const tree = parsePbtxt(readFileSync(file, 'utf8'), file);
  const others = tree.fields.map((f) => f.name).filter((name) => !STAGE_FIELDS.has(name));
  if (others.length > 0) throw createError('SF_ERR_CONFIG_INVALID', stageName, `config.pbtxt of a pipeline stage sets only instance_group and parameters, not ${[...new Set(others)].join(', ')}`);
  const own = buildModelConfig(tree, file, stageName).config;
  const sets = (name: string): boolean => tree.fields.some((f) => f.name === name);
  return {
    ...config,
    instance_group: sets('instance_group') ? own.instance_group : config.instance_group,
    parameters: { ...own.parameters, ...config.parameters },
  };
}

/** The backend a stage runs on, its model file, and its configuration named for that backend. */
export interface StageBackend {
  readonly kind: TensorModelKind;
  readonly file: string;
  readonly config: ModelConfig;
}

/**
 * Which backend runs an ONNX stage, as a repository picks it (model-source.ts `kindOfFile`): ONNX
 * Runtime, or on an Ascend NPU (KIND_NPU) GE on the stage's model.onnx (npu_ge), or AscendCL on a
 * `model.om` beside it when the stage folder holds one (npu_om: compiled by ATC or `serve-fn
 * convert` from that model.onnx, its dynamic-batch gears read from the file). An `.om` stage's
 * max_batch_size is left for the file to fill in (config-autocomplete.ts: its largest gear), so
 * the step scheduler never forms a batch the OM refuses.
 */
export function onnxStageBackend(config: ModelConfig, stageDir: string, onnxFile: string): StageBackend {
  const om = join(stageDir, 'model.om');
  const onNpu = placedOnNpu(config);
  const kind = onNpu && existsSync(om) ? 'npu_om' : (kindOfFile(config, onnxFile) as TensorModelKind);
  const named = { ...config, ...backendNames(kind) };
  if (kind === 'npu_ge') checkGeParameters(named);
  return kind === 'npu_om' ? { kind, file: om, config: { ...named, max_batch_size: 0 } } : { kind, file: onnxFile, config: named };
}
