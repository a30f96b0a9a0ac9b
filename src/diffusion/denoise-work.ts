import type { Datatype, Tensor } from '../spec/tensor.js';
import type { TensorWireRequest, TensorWireResult } from '../wire/tensor-model-plan.js';
import type { RequestClock } from '../engine/request-accounting.js';
import type { DenoiseSchedule } from './denoise-schedule.js';
import type { StepWork } from './step-scheduler.js';

/** The denoiser's ONNX input and output names and the timestep's dtype, as its export declares them. */
export interface DenoiserInterface {
  /** `hidden_states` (a DiT transformer) or `sample` (a UNet). */
  readonly latentInput: string;
  readonly timestepInput: string;
  readonly timestepType: Datatype;
  readonly textInput: string;
  readonly output: string;
}

/**
 * A denoiser input beyond the latents, timestep and text states, fixed for the whole denoising
 * (SDXL's `text_embeds` and `time_ids`): one row per branch, unconditional first with guidance,
 * as diffusers concatenates `[negative, positive]`.
 */
export interface AddedCondition {
  readonly name: string;
  /** One row's shape, without the batch dimension. */
  readonly shape: readonly number[];
  readonly rows: readonly Float32Array[];
}

/** What one image's denoising starts from. */
export interface DenoiseStart {
  readonly schedule: DenoiseSchedule;
  /** [1, C, h, w], owned by this request and updated in place. */
  readonly latents: Float32Array;
  readonly latentShape: readonly number[];
  /** The prompt's text-encoder states, [1, L, D]; with guidance, the negative prompt's too. */
  readonly text: Float32Array;
  readonly textShape: readonly number[];
  readonly negativeText?: Float32Array;
  /** Further FP32 inputs, as many rows as the request sends (two with guidance). */
  readonly added?: readonly AddedCondition[];
  readonly guidanceScale: number;
  /** Steps after which a preview (the clean-latent estimate) is handed to `onPreview`. */
  readonly previewAfter: ReadonlySet<number>;
  readonly onPreview?: (latents: Float32Array, step: number) => void;
  /** After each step, with the steps done. */
  readonly onStep?: (done: number) => void;
}

/**
 * One image's denoising as the step scheduler drives it: its latents and its own scheduler state
 * (vLLM-Omni's per-request scheduler copy), the rows of its step — two with classifier-free
 * guidance (unconditional first, as diffusers' `noise_pred.chunk(2)` reads them) — and the update,
 * `uncond + g·(cond − uncond)` then the scheduler's step, which is a few multiply-adds per latent
 * on the HTTP thread; the denoiser itself runs on its instance.
 */
export class DenoiseWork implements StepWork {
  readonly key: string;
  readonly rows: number;
  readonly submittedMs: number;
  dispatchedMs?: number;
  private stepIndex = 0;

  constructor(
    private readonly start: DenoiseStart,
    private readonly names: DenoiserInterface,
    clock: Pick<RequestClock, 'submittedMs'>,
  ) {
    const guided = start.negativeText !== undefined;
    this.rows = guided ? 2 : 1;
    this.key = `${start.latentShape.slice(1).join('x')}/${guided ? 'cfg' : 'plain'}/FP32`;
    this.submittedMs = clock.submittedMs;
  }

  get step(): number {
    return this.stepIndex;
  }

  stepInputs(): TensorWireRequest {
    const { latents, latentShape, text, textShape, negativeText, schedule } = this.start;
    const rows = this.rows;
    // Fresh buffers each step: they are transferred to the instance, not copied.
    const x = new Float32Array(latents.length * rows);
    const divisor = schedule.inputDivisor(this.stepIndex);
    if (divisor === 1) x.set(latents, 0);
    else for (let i = 0; i < latents.length; i++) x[i] = latents[i] / divisor;
    for (let r = 1; r < rows; r++) x.copyWithin(r * latents.length, 0, latents.length);
    const states = new Float32Array(text.length * rows);
    if (negativeText) states.set(negativeText, 0);
    states.set(text, (rows - 1) * text.length);
    const t = schedule.timestep(this.stepIndex);
    const inputs: Tensor[] = [
      { name: this.names.latentInput, datatype: 'FP32', shape: [rows, ...latentShape.slice(1)], data: x },
      { name: this.names.timestepInput, datatype: this.names.timestepType, shape: [rows], data: timestepData(this.names.timestepType, t, rows) },
      { name: this.names.textInput, datatype: 'FP32', shape: [rows, ...textShape.slice(1)], data: states },
      ...(this.start.added ?? []).map((condition): Tensor => {
        const data = new Float32Array(condition.rows.reduce((sum, row) => sum + row.length, 0));
        condition.rows.forEach((row, r) => data.set(row, r * row.length));
        return { name: condition.name, datatype: 'FP32', shape: [rows, ...condition.shape], data };
      }),
    ];
    return { inputs, outputs: [this.names.output], parameters: {} };
  }

  advance(result: TensorWireResult): boolean {
    const { latents, schedule, guidanceScale } = this.start;
    const out = result.outputs[0].data as Float32Array;
    const n = latents.length;
    let prediction: Float32Array;
    if (this.rows === 2) {
      prediction = new Float32Array(n);
      for (let i = 0; i < n; i++) prediction[i] = out[i] + guidanceScale * (out[n + i] - out[i]);
    } else {
      prediction = out.subarray(0, n);
    }
    const i = this.stepIndex;
    const preview = this.start.onPreview && this.start.previewAfter.has(i) ? schedule.preview(i, prediction, latents) : undefined;
    schedule.step(i, prediction, latents);
    this.stepIndex++;
    if (preview) this.start.onPreview!(preview, this.stepIndex);
    this.start.onStep?.(this.stepIndex);
    return this.stepIndex === schedule.steps;
  }
}

/** The timestep of every row in the input's own dtype (optimum exports UNets with an int64 timestep, DiTs with float32). */
function timestepData(datatype: Datatype, t: number, rows: number): Tensor['data'] {
  switch (datatype) {
    case 'INT64': return new BigInt64Array(rows).fill(BigInt(Math.round(t)));
    case 'INT32': return new Int32Array(rows).fill(Math.round(t));
    case 'FP64': return new Float64Array(rows).fill(t);
    default: return new Float32Array(rows).fill(t);
  }
}

export const TIMESTEP_TYPES: readonly Datatype[] = ['FP32', 'FP64', 'INT64', 'INT32'];
