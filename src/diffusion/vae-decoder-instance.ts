import type { BackendSession } from '../backends/backend.js';
import type { ModelContext } from '../definition/model-context.js';
import type { Tensor } from '../spec/tensor.js';
import { concatBatch, splitBatch } from '../tensor/tensor-batching.js';
import { createTensor } from '../tensor/tensor-factory.js';
import { geSessionOptions } from '../model-repository/ge-parameters.js';
import { sessionOptionsFromParameters } from '../model-repository/instance-placement.js';
import type { ExecuteRequest, ExecuteResponse, TensorModel } from '../instance/tensor-model-api.js';

/** The VAE stage's request parameters (config.pbtxt `parameters`), set by pipeline-stages.ts from the folder. */
export const VAE_PARAMETERS = { model: 'vae_model', input: 'vae_input', output: 'vae_output', scaling: 'scaling_factor', shift: 'shift_factor' } as const;
/** What the stage answers: 8-bit RGB rows, [batch, height, width, 3]. */
export const VAE_IMAGE_OUTPUT = 'image';

/**
 * The VAE decoder stage's instance: the whole of diffusers' `vae.decode` plus
 * `VaeImageProcessor.postprocess(output_type="pil")` in the stage's own thread, as a Triton
 * python_backend model wrapping an ONNX session would do it, so the HTTP thread handles only the
 * finished bytes (which sharp encodes off-thread). Latents in (`latent_sample`, as the pipeline
 * holds them), `latents / scaling_factor + shift_factor` through vae_decoder/model.onnx, then
 * {@link sampleToRgb}. The requests of one execution run as one batch, as a config-only model's do.
 */
export default class VaeDecoderInstance implements TensorModel {
  private session!: BackendSession;
  private input = '';
  private output = '';
  private scaling = 1;
  private shift = 0;

  async initialize(ctx: ModelContext): Promise<void> {
    const parameters = (ctx.config.parameters ?? {}) as Record<string, { string_value?: string }>;
    const value = (key: string): string => parameters[key]?.string_value ?? '';
    this.input = value(VAE_PARAMETERS.input);
    this.output = value(VAE_PARAMETERS.output);
    this.scaling = Number(value(VAE_PARAMETERS.scaling));
    this.shift = Number(value(VAE_PARAMETERS.shift));
    const own = parameters as Record<string, { string_value: string }>;
    // On an NPU (KIND_NPU) the file goes to GE, which takes GE's options, not ONNX Runtime's.
    const options = ctx.deviceKind === 'npu' ? geSessionOptions(own) : sessionOptionsFromParameters({ name: ctx.modelName, parameters: own });
    // A path relative to the pipeline folder (modelDir), which pipeline-stages.ts wrote itself; on the instance's own device.
    this.session = await ctx.loadModel(value(VAE_PARAMETERS.model), { options });
  }

  async execute(requests: readonly ExecuteRequest[]): Promise<ExecuteResponse[]> {
    const parts = requests.map((r) => r.input(this.input)!);
    const joined = concatBatch(this.input, parts);
    const latents = joined.data as Float32Array;
    const scaled = new Float32Array(latents.length);
    for (let i = 0; i < latents.length; i++) scaled[i] = latents[i] / this.scaling + this.shift;
    const produced = await this.session.run({ [this.input]: createTensor(this.input, 'FP32', joined.shape, scaled) }, [this.output]);
    const images = splitBatch(sampleToRgb(produced[this.output]), parts.map((p) => p.shape[0]));
    return images.map((image) => ({ outputs: [image] }));
  }
}

/**
 * diffusers' VaeImageProcessor.postprocess of a decoded [B, C, H, W] sample: `(x / 2 + 0.5).clamp(0, 1)`,
 * `(x * 255).round()` (numpy's round: halves to even) to uint8, channels last ([B, H, W, 3]); a
 * sample with fewer than 3 channels repeats its last.
 */
export function sampleToRgb(sample: Tensor): Tensor {
  const [batch, channels, height, width] = sample.shape;
  const data = sample.data as Float32Array;
  const plane = height * width;
  const rgb = new Uint8Array(batch * plane * 3);
  for (let b = 0; b < batch; b++) {
    for (let c = 0; c < 3; c++) {
      const from = (b * channels + Math.min(c, channels - 1)) * plane;
      const to = b * plane * 3 + c;
      for (let p = 0; p < plane; p++) rgb[to + p * 3] = toByte(data[from + p]);
    }
  }
  return createTensor(VAE_IMAGE_OUTPUT, 'UINT8', [batch, height, width, 3], rgb);
}

function toByte(x: number): number {
  const v = Math.min(1, Math.max(0, x / 2 + 0.5)) * 255;
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 === 1 ? r - 1 : r;
}
