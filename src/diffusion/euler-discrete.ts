/**
 * diffusers' EulerDiscreteScheduler, the math of
 * https://github.com/huggingface/diffusers/blob/main/src/diffusers/schedulers/scheduling_euler_discrete.py
 * for ε-, sample- and v-prediction UNets (Stable Diffusion 1.x/2.x exports): the betas of `__init__`
 * (shared with DDIM), `set_timesteps`' linspace / leading / trailing spacing with the sigmas
 * interpolated linearly (`interpolation_type: "linear"`) and the final σ 0 or σ_min
 * (`final_sigmas_type`), `init_noise_sigma`, `scale_model_input` (x / √(σ²+1)) and `step` without
 * churn (s_churn = 0, the pipelines' default, so deterministic). Karras / exponential / beta sigmas,
 * log-linear interpolation, continuous timesteps and zero-SNR rescaling are refused by
 * {@link unsupportedEulerOptions}. Hand-written: no JavaScript port of diffusers' schedulers exists.
 */
import { alphasCumprod, roundHalfEven } from './ddim.js';

export interface EulerConfig {
  readonly num_train_timesteps: number;
  readonly beta_start: number;
  readonly beta_end: number;
  readonly beta_schedule: 'linear' | 'scaled_linear' | 'squaredcos_cap_v2';
  readonly prediction_type: 'epsilon' | 'sample' | 'original_sample' | 'v_prediction';
  readonly timestep_spacing: 'linspace' | 'leading' | 'trailing';
  readonly steps_offset: number;
  readonly final_sigmas_type: 'zero' | 'sigma_min';
}

/** diffusers' __init__ defaults. */
export const EULER_DEFAULTS: EulerConfig = {
  num_train_timesteps: 1000, beta_start: 0.0001, beta_end: 0.02, beta_schedule: 'linear', prediction_type: 'epsilon',
  timestep_spacing: 'linspace', steps_offset: 0, final_sigmas_type: 'zero',
};

/** The scheduler_config.json options this port does not implement, named; undefined when there are none. */
export function unsupportedEulerOptions(json: Readonly<Record<string, unknown>>): string | undefined {
  const set = ['use_karras_sigmas', 'use_exponential_sigmas', 'use_beta_sigmas', 'rescale_betas_zero_snr'].filter((key) => json[key] === true);
  if (json.interpolation_type !== undefined && json.interpolation_type !== 'linear') set.push(`interpolation_type ${String(json.interpolation_type)}`);
  if (json.timestep_type !== undefined && json.timestep_type !== 'discrete') set.push(`timestep_type ${String(json.timestep_type)}`);
  if (Array.isArray(json.trained_betas)) set.push('trained_betas');
  return set.length > 0 ? `EulerDiscreteScheduler with ${set.join(', ')} is not supported` : undefined;
}

const f32 = Math.fround;

/** σ_t = √((1 − ᾱ_t)/ᾱ_t) for every training timestep, in float32 as diffusers computes it from its float32 ᾱ. */
export function eulerSigmaTable(alphas: Float32Array): Float32Array {
  return alphas.map((a) => f32(Math.sqrt(f32(f32(1 - a) / a))));
}

export interface EulerSchedule {
  readonly config: EulerConfig;
  /** float32, as `set_timesteps` keeps them (not integers under linspace spacing). */
  readonly timesteps: Float32Array;
  /** One more than the timesteps: the final σ (0, or σ_min). */
  readonly sigmas: Float32Array;
  /** The initial noise's standard deviation: σ_max, or √(σ_max² + 1) under leading spacing. */
  readonly initNoiseSigma: number;
}

/** `set_timesteps(n)`: the timesteps by `timestep_spacing`, σ interpolated at each, the final σ appended. */
export function eulerSchedule(config: EulerConfig, steps: number, table: Float32Array = eulerSigmaTable(alphasCumprod(config))): EulerSchedule {
  const T = config.num_train_timesteps;
  const timesteps = new Float32Array(steps);
  if (config.timestep_spacing === 'linspace') {
    for (let i = 0; i < steps; i++) timesteps[steps - 1 - i] = steps === 1 ? 0 : i === steps - 1 ? T - 1 : (i * (T - 1)) / (steps - 1);
  } else if (config.timestep_spacing === 'leading') {
    const ratio = Math.floor(T / steps);
    for (let i = 0; i < steps; i++) timesteps[steps - 1 - i] = i * ratio + config.steps_offset;
  } else {
    // np.arange(T, 0, −T/n).round() − 1
    const ratio = T / steps;
    for (let i = 0; i < steps; i++) timesteps[i] = roundHalfEven(T - i * ratio) - 1;
  }
  const sigmas = new Float32Array(steps + 1);
  // np.interp over the table's integer timesteps, in float64, then float32.
  for (let i = 0; i < steps; i++) {
    const t = Math.min(T - 1, Math.max(0, timesteps[i]));
    const low = Math.floor(t);
    const high = Math.min(T - 1, low + 1);
    sigmas[i] = table[low] + (t - low) * (table[high] - table[low]);
  }
  sigmas[steps] = config.final_sigmas_type === 'sigma_min' ? table[0] : 0;
  const sigmaMax = sigmas.reduce((a, b) => Math.max(a, b), 0);
  const initNoiseSigma = config.timestep_spacing === 'linspace' || config.timestep_spacing === 'trailing' ? sigmaMax : f32(Math.sqrt(f32(f32(sigmaMax * sigmaMax) + 1)));
  return { config, timesteps, sigmas, initNoiseSigma };
}

/** `scale_model_input`: the denoiser's input at step `i` is the sample divided by √(σ²+1). */
export function eulerInputDivisor(schedule: EulerSchedule, stepIndex: number): number {
  const sigma = schedule.sigmas[stepIndex];
  return f32(Math.sqrt(f32(f32(sigma * sigma) + 1)));
}

/** x0 as `step` derives it from the model output (σ_hat = σ without churn). */
function originalSample(schedule: EulerSchedule, sigma: number, out: number, x: number): number {
  switch (schedule.config.prediction_type) {
    case 'epsilon': return f32(x - f32(sigma * out));
    case 'v_prediction': {
      const s2 = f32(f32(sigma * sigma) + 1);
      return f32(f32(out * f32(-sigma / f32(Math.sqrt(s2)))) + f32(x / s2));
    }
    default: return out;
  }
}

/** One Euler step written into `sample`: `derivative = (x − x0)/σ`, `prev = x + derivative·(σ_next − σ)`, in float32. */
export function eulerStep(schedule: EulerSchedule, stepIndex: number, modelOutput: Float32Array, sample: Float32Array): void {
  const sigma = schedule.sigmas[stepIndex];
  const dt = f32(schedule.sigmas[stepIndex + 1] - sigma);
  for (let i = 0; i < sample.length; i++) {
    const x = sample[i];
    const derivative = f32(f32(x - originalSample(schedule, sigma, modelOutput[i], x)) / sigma);
    sample[i] = x + f32(derivative * dt);
  }
}

/** The x0 estimate at step `i`, decoded for partial images. */
export function eulerPreview(schedule: EulerSchedule, stepIndex: number, modelOutput: Float32Array, sample: Float32Array): Float32Array {
  const sigma = schedule.sigmas[stepIndex];
  return sample.map((x, i) => originalSample(schedule, sigma, modelOutput[i], x));
}
