import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ddimSchedule, ddimStep, DDIM_DEFAULTS, type DdimConfig } from '../../src/diffusion/ddim.js';
import { EULER_DEFAULTS, eulerInputDivisor, eulerSchedule, eulerStep, type EulerConfig } from '../../src/diffusion/euler-discrete.js';
import { FLOW_MATCH_DEFAULTS, flowMatchSchedule, calculateShift } from '../../src/diffusion/flow-match-euler.js';
import { scheduleFor, schedulerFromConfig } from '../../src/diffusion/denoise-schedule.js';
import { seededNormal } from '../../src/diffusion/seeded-noise.js';
import { pythonWithNumpy, runPythonJson } from '../helpers/python-numpy.js';

const python = pythonWithNumpy();
const script = fileURLToPath(new URL('../fixtures/diffusion/scheduler_reference.py', import.meta.url));

interface Reference {
  flow: Record<string, { timesteps: number[]; sigmas: number[] }>;
  ddim: Record<string, { timesteps: number[]; x: number[]; eps: number[]; prev: number[][] }>;
  euler: Record<string, { timesteps: number[]; sigmas: number[]; init_noise_sigma: number; x: number[]; out: number[]; scaled: number[][]; prev: number[][] }>;
}

const close = (actual: ArrayLike<number>, expected: readonly number[], tolerance: number): void => {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(Math.abs(actual[i] - expected[i]), `index ${i}: ${actual[i]} vs ${expected[i]}`).toBeLessThanOrEqual(tolerance * Math.max(1, Math.abs(expected[i])));
};

describe.skipIf(!python)('diffusion schedulers against numpy from diffusers\' formulas (python3-numpy)', () => {
  const ref = python ? runPythonJson<Reference>(python, script) : ({} as Reference);

  it('FlowMatchEulerDiscreteScheduler: static shift 1 and 3, dynamic μ for 4096 and 1024 tokens, 1/8/50 steps, σ = 0 appended', () => {
    for (const [key, expected] of Object.entries(ref.flow)) {
      const [steps, mode, value] = key.split('-');
      const n = Number(steps);
      const schedule = mode === 'static'
        ? flowMatchSchedule({ ...FLOW_MATCH_DEFAULTS, shift: Number(value) }, n)
        : flowMatchSchedule({ ...FLOW_MATCH_DEFAULTS, use_dynamic_shifting: true }, n, calculateShift(Number(value), FLOW_MATCH_DEFAULTS));
      close(schedule.timesteps, expected.timesteps, 1e-6);
      close(schedule.sigmas, expected.sigmas, 1e-6);
      expect(schedule.sigmas[n]).toBe(0);
    }
  });

  it('DDIMScheduler: leading / trailing / linspace timesteps and the η = 0 update, linear and scaled_linear betas', () => {
    for (const [key, expected] of Object.entries(ref.ddim)) {
      const [steps, spacing, betas] = key.split('-');
      const config: DdimConfig = {
        ...DDIM_DEFAULTS, clip_sample: false, timestep_spacing: spacing as DdimConfig['timestep_spacing'],
        ...(betas === 'scaled_linear' ? { beta_schedule: 'scaled_linear', beta_start: 0.00085, beta_end: 0.012, steps_offset: spacing === 'leading' ? 1 : 0 } : {}),
      };
      const schedule = ddimSchedule(config, Number(steps));
      expect(schedule.timesteps, key).toEqual(expected.timesteps);
      expected.prev.forEach((prev, i) => {
        const x = Float32Array.from(expected.x);
        ddimStep(schedule, i, Float32Array.from(expected.eps), x);
        close(x, prev, 1e-5);
      });
    }
  });

  it('EulerDiscreteScheduler: linspace / leading / trailing timesteps, interpolated sigmas, final σ, init_noise_sigma, scale_model_input and the step for ε-, v- and sample prediction', () => {
    for (const [key, expected] of Object.entries(ref.euler)) {
      const [steps, spacing, betas, final, prediction] = key.split('-');
      const config: EulerConfig = {
        ...EULER_DEFAULTS, timestep_spacing: spacing as EulerConfig['timestep_spacing'], steps_offset: spacing === 'leading' ? 1 : 0,
        final_sigmas_type: final as EulerConfig['final_sigmas_type'], prediction_type: prediction as EulerConfig['prediction_type'],
        ...(betas === 'scaled_linear' ? { beta_schedule: 'scaled_linear', beta_start: 0.00085, beta_end: 0.012 } : {}),
      };
      const schedule = eulerSchedule(config, Number(steps));
      close(schedule.timesteps, expected.timesteps, 1e-6);
      close(schedule.sigmas, expected.sigmas, 2e-6);
      close([schedule.initNoiseSigma], [expected.init_noise_sigma], 2e-6);
      expected.prev.forEach((prev, i) => {
        close(expected.x.map((x) => x / eulerInputDivisor(schedule, i)), expected.scaled[i], 2e-6);
        const x = Float32Array.from(expected.x);
        eulerStep(schedule, i, Float32Array.from(expected.out), x);
        close(x, prev, 1e-5);
      });
    }
  });
});

describe('diffusion schedulers', () => {
  it('reads scheduler_config.json with diffusers\' field names and defaults, and refuses other classes', () => {
    const flow = schedulerFromConfig({ _class_name: 'FlowMatchEulerDiscreteScheduler', shift: 3.0, use_dynamic_shifting: false });
    expect(flow).toMatchObject({ kind: 'flow-match', config: { shift: 3, num_train_timesteps: 1000, base_image_seq_len: 256 } });
    expect(schedulerFromConfig({ _class_name: 'DDIMScheduler', prediction_type: 'v_prediction' })).toMatchObject({ kind: 'ddim', config: { prediction_type: 'v_prediction', clip_sample: true } });
    expect(schedulerFromConfig({ _class_name: 'LCMScheduler' })).toBeUndefined();
    expect(schedulerFromConfig({ _class_name: 'EulerDiscreteScheduler', timestep_spacing: 'leading', steps_offset: 1 })).toMatchObject({ kind: 'euler', config: { timestep_spacing: 'leading', steps_offset: 1, prediction_type: 'epsilon', final_sigmas_type: 'zero' } });
    expect(() => schedulerFromConfig({ _class_name: 'EulerDiscreteScheduler', use_karras_sigmas: true, interpolation_type: 'log_linear' })).toThrow('EulerDiscreteScheduler with use_karras_sigmas, interpolation_type log_linear is not supported');
  });

  it('flow matching lands on the oracle target: Euler on v = (x − c)/σ ends at c for any step count and shift', () => {
    for (const shift of [1, 3]) {
      for (const steps of [1, 4, 13]) {
        const schedule = scheduleFor(schedulerFromConfig({ _class_name: 'FlowMatchEulerDiscreteScheduler', shift })!, steps, 64);
        const c = Float32Array.from([0.25, -0.5, 0.75]);
        const x = seededNormal(7, 3);
        for (let i = 0; i < steps; i++) {
          const sigma = schedule.timestep(i) / 1000;
          schedule.step(i, x.map((v, j) => (v - c[j]) / sigma), x);
        }
        close(x, [...c], 1e-5);
      }
    }
  });

  it('Euler lands on an ε-oracle\'s target: ε = (x − c)/σ read from the scaled input, from init_noise_sigma-scaled noise, any spacing and step count', () => {
    for (const timestep_spacing of ['leading', 'linspace', 'trailing']) {
      for (const steps of [1, 5, 20]) {
        const schedule = scheduleFor(schedulerFromConfig({ _class_name: 'EulerDiscreteScheduler', beta_schedule: 'scaled_linear', beta_start: 0.00085, beta_end: 0.012, timestep_spacing, steps_offset: 1 })!, steps, 64);
        const c = Float32Array.from([0.25, -0.5, 0.75]);
        const x = seededNormal(7, 3).map((v) => v * schedule.initNoiseSigma);
        for (let i = 0; i < steps; i++) {
          // The oracle sees only the scaled input x/√(σ²+1) and its own σ; it must undo the scaling.
          const divisor = schedule.inputDivisor(i);
          const sigma = Math.sqrt(divisor * divisor - 1);
          const input = x.map((v) => v / divisor);
          schedule.step(i, input.map((v, j) => (v * divisor - c[j]) / sigma), x);
        }
        close(x, [...c], 1e-4);
      }
    }
  });

  it('seeded noise is the documented stream: same seed, same values; standard normal moments', () => {
    expect(seededNormal(42, 5)).toEqual(seededNormal(42, 5));
    expect(seededNormal(42, 5)).not.toEqual(seededNormal(43, 5));
    const many = seededNormal(1, 200_000);
    const mean = many.reduce((a, b) => a + b, 0) / many.length;
    const variance = many.reduce((a, b) => a + (b - mean) ** 2, 0) / many.length;
    expect(Math.abs(mean)).toBeLessThan(0.01);
    expect(Math.abs(variance - 1)).toBeLessThan(0.02);
  });
});
