/**
 * diffusers' DDIMScheduler, the math of
 * https://github.com/huggingface/diffusers/blob/main/src/diffusers/schedulers/scheduling_ddim.py
 * (`__init__`'s betas, `set_timesteps`' three spacings, `step` with η = 0, the deterministic DDIM
 * that diffusers' pipelines run by default) for ε-, sample- and v-prediction, with `clip_sample`;
 * dynamic thresholding is not supported. Hand-written: no JavaScript port of diffusers' schedulers exists.
 */

export interface DdimConfig {
  readonly num_train_timesteps: number;
  readonly beta_start: number;
  readonly beta_end: number;
  readonly beta_schedule: 'linear' | 'scaled_linear' | 'squaredcos_cap_v2';
  readonly clip_sample: boolean;
  readonly clip_sample_range: number;
  readonly set_alpha_to_one: boolean;
  readonly steps_offset: number;
  readonly prediction_type: 'epsilon' | 'sample' | 'v_prediction';
  readonly timestep_spacing: 'leading' | 'trailing' | 'linspace';
}

/** diffusers' __init__ defaults. */
export const DDIM_DEFAULTS: DdimConfig = {
  num_train_timesteps: 1000, beta_start: 0.0001, beta_end: 0.02, beta_schedule: 'linear', clip_sample: true, clip_sample_range: 1.0,
  set_alpha_to_one: true, steps_offset: 0, prediction_type: 'epsilon', timestep_spacing: 'leading',
};

const f32 = Math.fround;

/** ᾱ_t for t = 0..T−1, as the float32 cumulative product diffusers keeps. */
export function alphasCumprod(config: Pick<DdimConfig, 'num_train_timesteps' | 'beta_start' | 'beta_end' | 'beta_schedule'>): Float32Array {
  const T = config.num_train_timesteps;
  const betas = new Float32Array(T);
  const lin = (a: number, b: number, i: number): number => (T === 1 ? a : a + (i * (b - a)) / (T - 1));
  for (let i = 0; i < T; i++) {
    if (config.beta_schedule === 'linear') betas[i] = lin(config.beta_start, config.beta_end, i);
    else if (config.beta_schedule === 'scaled_linear') betas[i] = f32(f32(lin(Math.sqrt(config.beta_start), Math.sqrt(config.beta_end), i)) ** 2);
    else {
      // betas_for_alpha_bar with the cosine alpha_bar, capped at 0.999, in float64 then float32.
      const alphaBar = (t: number): number => Math.cos(((t + 0.008) / 1.008) * Math.PI / 2) ** 2;
      betas[i] = Math.min(1 - alphaBar((i + 1) / T) / alphaBar(i / T), 0.999);
    }
  }
  const out = new Float32Array(T);
  let product = 1;
  for (let i = 0; i < T; i++) {
    product = f32(product * f32(1 - betas[i]));
    out[i] = product;
  }
  return out;
}

/** `set_timesteps(n)`: the integer timesteps a request runs, by `timestep_spacing`. */
export function ddimTimesteps(config: DdimConfig, steps: number): number[] {
  const T = config.num_train_timesteps;
  if (config.timestep_spacing === 'linspace') {
    return Array.from({ length: steps }, (_, i) => roundHalfEven(steps === 1 ? 0 : (i * (T - 1)) / (steps - 1))).reverse();
  }
  if (config.timestep_spacing === 'leading') {
    const ratio = Math.floor(T / steps);
    return Array.from({ length: steps }, (_, i) => i * ratio + config.steps_offset).reverse();
  }
  // trailing: np.round(np.arange(T, 0, -T/n)) − 1.
  const ratio = T / steps;
  const out: number[] = [];
  for (let t = T; t > 0; t -= ratio) out.push(roundHalfEven(t) - 1);
  return out;
}

/** numpy's round: halves to even. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** A request's DDIM state: its timesteps and the table they index. */
export interface DdimSchedule {
  readonly config: DdimConfig;
  readonly alphas: Float32Array;
  readonly timesteps: readonly number[];
  readonly steps: number;
}

export function ddimSchedule(config: DdimConfig, steps: number, alphas: Float32Array = alphasCumprod(config)): DdimSchedule {
  return { config, alphas, timesteps: ddimTimesteps(config, steps), steps };
}

/** x0 and ε from the model output, as `step` derives them before the update. */
function predictions(schedule: DdimSchedule, alphaT: number, out: number, x: number): [x0: number, eps: number] {
  const beta = 1 - alphaT;
  switch (schedule.config.prediction_type) {
    case 'epsilon': return [(x - Math.sqrt(beta) * out) / Math.sqrt(alphaT), out];
    case 'sample': return [out, (x - Math.sqrt(alphaT) * out) / Math.sqrt(beta)];
    case 'v_prediction': return [Math.sqrt(alphaT) * x - Math.sqrt(beta) * out, Math.sqrt(alphaT) * out + Math.sqrt(beta) * x];
  }
}

/**
 * One DDIM step with η = 0, written into `sample`: prev_t = t − T/n, x0 (clipped with
 * `clip_sample`), then `prev = √ᾱ_prev·x0 + √(1−ᾱ_prev)·ε`; ᾱ_prev is 1 (`set_alpha_to_one`) or ᾱ_0 below t = 0.
 */
export function ddimStep(schedule: DdimSchedule, stepIndex: number, modelOutput: Float32Array, sample: Float32Array): void {
  const { config, alphas } = schedule;
  const t = schedule.timesteps[stepIndex];
  const prevT = t - Math.floor(config.num_train_timesteps / schedule.steps);
  const alphaT = alphas[t];
  const alphaPrev = prevT >= 0 ? alphas[prevT] : config.set_alpha_to_one ? 1 : alphas[0];
  const range = config.clip_sample_range;
  for (let i = 0; i < sample.length; i++) {
    let [x0, eps] = predictions(schedule, alphaT, modelOutput[i], sample[i]);
    if (config.clip_sample) x0 = Math.min(range, Math.max(-range, x0));
    sample[i] = Math.sqrt(alphaPrev) * x0 + Math.sqrt(1 - alphaPrev) * eps;
  }
}

/** The x0 estimate at step `stepIndex`, for previews. */
export function ddimPreview(schedule: DdimSchedule, stepIndex: number, modelOutput: Float32Array, sample: Float32Array): Float32Array {
  const alphaT = schedule.alphas[schedule.timesteps[stepIndex]];
  return sample.map((x, i) => predictions(schedule, alphaT, modelOutput[i], x)[0]);
}
