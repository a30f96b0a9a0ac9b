import type { ModelConfig } from '../model-repository/model-config.js';

/** A pipeline's stages, as their /v2 models are named (`<pipeline>_<stage>`); text_encoder_2 only in a two-encoder (SDXL) pipeline. */
export const STAGE_NAMES = ['text_encoder', 'text_encoder_2', 'denoiser', 'vae_decoder'] as const;
export type StageName = (typeof STAGE_NAMES)[number];

/** Instances per stage, wherever the stage's config.pbtxt puts them (`--stage-instances`). */
export type StageInstances = Readonly<Partial<Record<StageName, number>>>;

/**
 * `denoiser=2,vae_decoder=1`: the per-stage replica counts of vLLM-Omni's stage configuration
 * (https://docs.vllm.ai/projects/vllm-omni/en/latest/configuration/stage_configs/) from the command
 * line. Throws an Error saying what is wrong: a part that is not `<stage>=<count>`, a count that is
 * not a positive integer, a stage named twice, or a stage that does not exist (naming the stages).
 */
export function parseStageInstances(text: string): StageInstances {
  const counts: Partial<Record<StageName, number>> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const match = /^([A-Za-z_][\w]*)=(\d+)$/.exec(part);
    if (!match) throw new Error(`'${part}' is not <stage>=<count>, e.g. denoiser=2`);
    const [, stage, count] = match;
    if (Number(count) < 1) throw new Error(`${stage}: the count must be 1 or more, got ${count}`);
    if (stage in counts) throw new Error(`${stage} is named twice`);
    counts[stage as StageName] = Number(count);
  }
  checkStageInstances(counts);
  return counts;
}

/** Throws an Error naming the stages `counts` names that a pipeline does not have. */
export function checkStageInstances(counts: Readonly<Record<string, number | undefined>>): void {
  const unknown = Object.keys(counts).filter((stage) => !(STAGE_NAMES as readonly string[]).includes(stage));
  if (unknown.length > 0) throw new Error(`unknown pipeline stage${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => `'${s}'`).join(', ')}; the stages are ${STAGE_NAMES.join(', ')}`);
}

/**
 * A stage's configuration with `count` instances on each device of each instance_group (devices
 * and kinds kept), as if its config.pbtxt said `count: <count>`: the command line wins over the file.
 */
export function withInstanceCount(config: ModelConfig, count: number | undefined): ModelConfig {
  return count === undefined ? config : { ...config, instance_group: config.instance_group.map((group) => ({ ...group, count })) };
}
