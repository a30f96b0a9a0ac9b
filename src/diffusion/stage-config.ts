import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createError } from '../errors/index.js';
import { buildModelConfig, type ModelConfig } from '../model-repository/model-config.js';
import { parsePbtxt } from '../model-repository/pbtxt-parser.js';

/** What a stage folder's config.pbtxt may set; the rest of a stage's configuration is the pipeline's. */
const STAGE_FIELDS: ReadonlySet<string> = new Set(['instance_group', 'parameters']);

/**
 * A stage's own placement, as a Triton user writes it for any model: an optional `config.pbtxt`
 * in the stage's folder (`text_encoder/`, `transformer/` or `unet/`, `vae_decoder/`) with
 * `instance_group` (count, KIND_CPU / KIND_GPU and `gpus`, Triton's model_config.proto) and
 * `parameters` (ONNX Runtime's `intra_op_thread_count`, `inter_op_thread_count`,
 * `enable_mem_arena`, as Triton's onnxruntime backend reads them). This is the per-stage
 * `runtime.devices` / replica count of vLLM-Omni's stage configuration
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
