/**
 * diffusers' FlowMatchEulerDiscreteScheduler, the math of
 * https://github.com/huggingface/diffusers/blob/main/src/diffusers/schedulers/scheduling_flow_match_euler_discrete.py
 * (`__init__`, `set_timesteps`, `time_shift`, `step`) for the default sigma schedule (no Karras,
 * exponential or beta sigmas, no `shift_terminal`, no inverted sigmas), in float32 where diffusers
 * keeps float32 tensors. Hand-written: no JavaScript port of diffusers' schedulers exists.
 */

export interface FlowMatchConfig {
  readonly num_train_timesteps: number;
  readonly shift: number;
  readonly use_dynamic_shifting: boolean;
  readonly base_shift: number;
  readonly max_shift: number;
  readonly base_image_seq_len: number;
  readonly max_image_seq_len: number;
}

/** diffusers' __init__ defaults. */
export const FLOW_MATCH_DEFAULTS: FlowMatchConfig = {
  num_train_timesteps: 1000, shift: 1.0, use_dynamic_shifting: false, base_shift: 0.5, max_shift: 1.15, base_image_seq_len: 256, max_image_seq_len: 4096,
};

/** The timesteps a request runs and the sigmas between them: `sigmas` has one more entry, the appended σ = 0. */
export interface FlowMatchSchedule {
  readonly timesteps: Float32Array;
  readonly sigmas: Float32Array;
}

const f32 = Math.fround;

/**
 * The pipelines' `calculate_shift` (pipeline_flux.py, pipeline_stable_diffusion_3.py): μ linear in
 * the image's token count, from `base_shift` at `base_image_seq_len` to `max_shift` at `max_image_seq_len`.
 */
export function calculateShift(imageSeqLen: number, config: FlowMatchConfig): number {
  const m = (config.max_shift - config.base_shift) / (config.max_image_seq_len - config.base_image_seq_len);
  const b = config.base_shift - m * config.base_image_seq_len;
  return imageSeqLen * m + b;
}

/**
 * `set_timesteps(n, mu=mu)`: timesteps evenly spaced from σ_max·T to σ_min·T (σ_min and σ_max as
 * `__init__` leaves them: with a static shift, already shifted once), divided by T, shifted
 * (statically, or by `time_shift(mu, 1, σ)` with dynamic shifting), cast to float32; timesteps are
 * σ·T in float32, and σ = 0 is appended.
 */
export function flowMatchSchedule(config: FlowMatchConfig, steps: number, mu?: number): FlowMatchSchedule {
  const T = config.num_train_timesteps;
  if (config.use_dynamic_shifting && mu === undefined) throw new Error('use_dynamic_shifting needs mu');
  const shiftStatic = (s: number): number => (config.shift * s) / (1 + (config.shift - 1) * s);
  // __init__: timesteps linspace(1, T, T) in float32, reversed; σ = t / T, statically shifted unless dynamic.
  const initSigma = (t: number): number => {
    const s = f32(f32(t) / T);
    return config.use_dynamic_shifting ? s : f32(f32(config.shift * s) / f32(1 + f32((config.shift - 1) * s)));
  };
  const sigmaMax = initSigma(T);
  const sigmaMin = initSigma(1);
  const start = sigmaMax * T;
  const end = sigmaMin * T;
  const timesteps = new Float32Array(steps);
  const sigmas = new Float32Array(steps + 1);
  for (let i = 0; i < steps; i++) {
    // numpy.linspace: start + i·step, with the last value exactly `end`.
    const t = steps === 1 ? start : i === steps - 1 ? end : start + (i * (end - start)) / (steps - 1);
    const s = t / T;
    const shifted = config.use_dynamic_shifting ? Math.exp(mu!) / (Math.exp(mu!) + (1 / s - 1)) : shiftStatic(s);
    sigmas[i] = shifted;
    timesteps[i] = f32(sigmas[i] * T);
  }
  sigmas[steps] = 0;
  return { timesteps, sigmas };
}

/**
 * One Euler step, `prev = sample + (σ_next − σ)·model_output`, in float32 as diffusers upcasts:
 * written into `sample` in place (the request owns its latents).
 */
export function flowMatchStep(schedule: FlowMatchSchedule, stepIndex: number, modelOutput: Float32Array, sample: Float32Array): void {
  const dt = f32(schedule.sigmas[stepIndex + 1] - schedule.sigmas[stepIndex]);
  for (let i = 0; i < sample.length; i++) sample[i] = sample[i] + f32(dt * modelOutput[i]);
}

/** The current estimate of the clean latents for a preview, `x − σ·v` (flow matching's x0 prediction). */
export function flowMatchPreview(schedule: FlowMatchSchedule, stepIndex: number, modelOutput: Float32Array, sample: Float32Array): Float32Array {
  const sigma = schedule.sigmas[stepIndex];
  return sample.map((x, i) => x - sigma * modelOutput[i]);
}
