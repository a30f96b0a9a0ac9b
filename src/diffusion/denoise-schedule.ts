import { alphasCumprod, ddimPreview, ddimSchedule, ddimStep, DDIM_DEFAULTS, type DdimConfig } from './ddim.js';
import { EULER_DEFAULTS, eulerInputDivisor, eulerPreview, eulerSchedule, eulerSigmaTable, eulerStep, unsupportedEulerOptions, type EulerConfig } from './euler-discrete.js';
import { calculateShift, FLOW_MATCH_DEFAULTS, flowMatchPreview, flowMatchSchedule, flowMatchStep, type FlowMatchConfig } from './flow-match-euler.js';

/**
 * One request's scheduler state, as vLLM-Omni deep-copies diffusers' scheduler per request: its
 * timesteps, the step it is at, and the update of its latents. Requests at different steps, with
 * different step counts, share a denoiser call; each advances only its own state.
 */
export interface DenoiseSchedule {
  readonly steps: number;
  /** The initial noise is multiplied by it (diffusers' `init_noise_sigma`; 1 but for Euler). */
  readonly initNoiseSigma: number;
  /** The denoiser's input at step `i` is the latents divided by it (`scale_model_input`; 1 but for Euler). */
  inputDivisor(i: number): number;
  /** The timestep fed to the denoiser at step `i`, in the scheduler's own units (0..num_train_timesteps). */
  timestep(i: number): number;
  /** Writes the latents after step `i` into `sample`, from the denoiser's output. */
  step(i: number, modelOutput: Float32Array, sample: Float32Array): void;
  /** The clean-latent estimate at step `i`, decoded for partial images. */
  preview(i: number, modelOutput: Float32Array, sample: Float32Array): Float32Array;
}

/** A folder's scheduler: its class, read from scheduler_config.json with diffusers' field names. */
export type SchedulerKind =
  | { readonly kind: 'flow-match'; readonly config: FlowMatchConfig }
  | { readonly kind: 'ddim'; readonly config: DdimConfig; readonly alphas: Float32Array }
  | { readonly kind: 'euler'; readonly config: EulerConfig; readonly sigmaTable: Float32Array };

export const SUPPORTED_SCHEDULERS = ['FlowMatchEulerDiscreteScheduler', 'DDIMScheduler', 'EulerDiscreteScheduler'] as const;

/**
 * The scheduler of `scheduler_config.json` (`_class_name` and fields), defaults filled in as
 * diffusers' __init__ does; undefined for another class; `unsupported` is called with what a
 * supported class's options ask that is not implemented.
 */
export function schedulerFromConfig(json: Readonly<Record<string, unknown>>, unsupported: (why: string) => never = (why) => { throw new Error(why); }): SchedulerKind | undefined {
  const pick = <T extends object>(defaults: T): T => {
    const out: Record<string, unknown> = { ...(defaults as Record<string, unknown>) };
    for (const key of Object.keys(defaults)) if (json[key] !== undefined && json[key] !== null) out[key] = json[key];
    return out as T;
  };
  if (json._class_name === 'FlowMatchEulerDiscreteScheduler') return { kind: 'flow-match', config: pick(FLOW_MATCH_DEFAULTS) };
  if (json._class_name === 'DDIMScheduler') {
    const config = pick(DDIM_DEFAULTS);
    return { kind: 'ddim', config, alphas: alphasCumprod(config) };
  }
  if (json._class_name === 'EulerDiscreteScheduler') {
    const why = unsupportedEulerOptions(json);
    if (why) unsupported(why);
    const config = pick(EULER_DEFAULTS);
    return { kind: 'euler', config, sigmaTable: eulerSigmaTable(alphasCumprod(config)) };
  }
  return undefined;
}

/** A fresh per-request schedule of `steps` steps; `imageSeqLen` (latent tokens) sets μ under dynamic shifting. */
export function scheduleFor(scheduler: SchedulerKind, steps: number, imageSeqLen: number): DenoiseSchedule {
  if (scheduler.kind === 'flow-match') {
    const mu = scheduler.config.use_dynamic_shifting ? calculateShift(imageSeqLen, scheduler.config) : undefined;
    const s = flowMatchSchedule(scheduler.config, steps, mu);
    return { steps, initNoiseSigma: 1, inputDivisor: () => 1, timestep: (i) => s.timesteps[i], step: (i, out, x) => flowMatchStep(s, i, out, x), preview: (i, out, x) => flowMatchPreview(s, i, out, x) };
  }
  if (scheduler.kind === 'euler') {
    const s = eulerSchedule(scheduler.config, steps, scheduler.sigmaTable);
    return {
      steps, initNoiseSigma: s.initNoiseSigma, inputDivisor: (i) => eulerInputDivisor(s, i), timestep: (i) => s.timesteps[i],
      step: (i, out, x) => eulerStep(s, i, out, x), preview: (i, out, x) => eulerPreview(s, i, out, x),
    };
  }
  const s = ddimSchedule(scheduler.config, steps, scheduler.alphas);
  return { steps, initNoiseSigma: 1, inputDivisor: () => 1, timestep: (i) => s.timesteps[i], step: (i, out, x) => ddimStep(s, i, out, x), preview: (i, out, x) => ddimPreview(s, i, out, x) };
}
