import type { TensorModelVersion } from '../inference/tensor-model-version.js';
import type { Tensor, TensorSpec } from '../spec/tensor.js';
import type { TextTokenizer } from '../tokenizer/tokenizer.js';
import { encoderOutputs, paddedTokenIds, rowOf, type EncoderStage, type PromptEncoder, type PromptEncoding, type PromptRequest } from './prompt-encoding.js';

/**
 * The prompt encoding of an SDXL-style pipeline (two tokenizers, two CLIP text encoders, a UNet
 * with added conditions), diffusers' `StableDiffusionXLPipeline.encode_prompt` with `clip_skip=None`
 * and `_get_add_time_ids`
 * (https://github.com/huggingface/diffusers/blob/main/src/diffusers/pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl.py),
 * on the tensors optimum's ONNX export names (`ORTStableDiffusionXLPipeline`): the text encoders
 * export `hidden_states.0` … `hidden_states.N` (N their layers), text_encoder_2 also `text_embeds`;
 * the UNet takes `text_embeds` and `time_ids` beside `encoder_hidden_states`.
 */

/** The UNet's added-condition inputs (diffusers' `added_cond_kwargs`). */
export const SDXL_ADDED_INPUTS = ['text_embeds', 'time_ids'] as const;

/** The tensors an SDXL-style pipeline's stages are fed and read by. */
export interface DualEncoderNames {
  /** text_encoder's penultimate layer (diffusers' `hidden_states[-2]`). */
  readonly firstHidden: string;
  readonly second: { readonly tokens: TensorSpec; readonly hidden: string; readonly pooled: string };
}

/**
 * The names read from the two encoders, after checking the UNet takes the added conditions;
 * `fail` names what is missing.
 */
export function dualEncoderNames(first: TensorModelVersion, second: TensorModelVersion, denoiser: TensorModelVersion, fail: (why: string) => never): DualEncoderNames {
  for (const name of SDXL_ADDED_INPUTS) {
    const input = denoiser.info.inputs.find((s) => s.name === name);
    if (!input) fail(`an SDXL-style pipeline's unet/model.onnx needs an input named ${name} (its inputs: ${denoiser.info.inputs.map((s) => s.name).join(', ')})`);
    else if (input.datatype !== 'FP32') fail(`the UNet's ${name} is ${input.datatype}; FP32 expected (fp16 exports are not served yet)`);
  }
  const tokens = second.info.inputs.find((s) => s.name === 'input_ids') ?? fail(`text_encoder_2/model.onnx has no input named input_ids (its inputs: ${second.info.inputs.map((s) => s.name).join(', ')})`);
  if (tokens.datatype !== 'INT64' && tokens.datatype !== 'INT32') fail(`text_encoder_2's input_ids is ${tokens.datatype}; INT64 or INT32 expected`);
  if (!second.info.outputs.some((s) => s.name === 'text_embeds')) fail(`text_encoder_2/model.onnx has no output named text_embeds, the pooled projection (its outputs: ${second.info.outputs.map((s) => s.name).join(', ')})`);
  return {
    firstHidden: penultimate(first, 'text_encoder/model.onnx', fail),
    second: { tokens, hidden: penultimate(second, 'text_encoder_2/model.onnx', fail), pooled: 'text_embeds' },
  };
}

/** `hidden_states.{N−1}` of an encoder exporting hidden_states.0 … hidden_states.N: the `hidden_states[-2]` diffusers takes. */
function penultimate(model: TensorModelVersion, what: string, fail: (why: string) => never): string {
  const layers = model.info.outputs.map((s) => /^hidden_states\.(\d+)$/.exec(s.name)).filter((m) => m !== null).map((m) => Number(m[1]));
  const last = Math.max(-1, ...layers);
  if (last < 1) fail(`${what} exports no hidden_states.N outputs (N ≥ 1); SDXL reads its penultimate layer, which optimum exports with the encoders' hidden states`);
  return `hidden_states.${last - 1}`;
}

/**
 * SDXL's encode_prompt: the same prompt through both tokenizers (each with its own padding) and
 * encoders; encoder_hidden_states is both penultimate layers joined on the feature axis (first,
 * then second), `text_embeds` text_encoder_2's pooled projection, `time_ids`
 * (original_size, crops_coords_top_left, target_size) = (h, w, 0, 0, h, w). With guidance the
 * unconditional branch is the negative prompt through the same path, or, when the request names
 * none and the pipeline has `force_zeros_for_empty_prompt`, zeros for both its states and pooled
 * embeds; the time ids are the same for both branches (no negative_original_size).
 */
export class DualTextEncoding implements PromptEncoder {
  constructor(
    private readonly encoders: readonly [EncoderPart, EncoderPart],
    private readonly names: DualEncoderNames,
    private readonly maxLength: number,
    private readonly forceZerosForEmptyPrompt: boolean,
  ) {}

  async encode(request: PromptRequest): Promise<PromptEncoding> {
    const zeros = request.guided && request.negativePrompt === undefined && this.forceZerosForEmptyPrompt;
    const texts = request.guided && !zeros ? [request.negativePrompt ?? '', request.prompt] : [request.prompt];
    const [first, second] = this.encoders;
    const [[firstHidden], [secondHidden, pooled]] = await Promise.all([
      this.run(first, texts, [this.names.firstHidden]),
      this.run(second, texts, [this.names.second.hidden, this.names.second.pooled]),
    ]);
    const rows = texts.length;
    const [, length, firstWidth] = firstHidden.shape;
    const width = firstWidth + secondHidden.shape[2];
    const joined = (row: number): Float32Array => joinFeatures(rowOf(firstHidden, row, rows), rowOf(secondHidden, row, rows), length);
    const text = joined(rows - 1);
    const pooledText = rowOf(pooled, rows - 1, rows);
    const timeIds = Float32Array.of(request.height, request.width, 0, 0, request.height, request.width);
    const added = (negativePooled?: Float32Array) => [
      { name: SDXL_ADDED_INPUTS[0], shape: [pooledText.length], rows: negativePooled ? [negativePooled, pooledText] : [pooledText] },
      { name: SDXL_ADDED_INPUTS[1], shape: [timeIds.length], rows: negativePooled ? [timeIds, timeIds] : [timeIds] },
    ];
    const textShape = [1, length, width];
    if (!request.guided) return { text, textShape, added: added() };
    if (zeros) return { text, textShape, negativeText: new Float32Array(text.length), added: added(new Float32Array(pooledText.length)) };
    return { text, textShape, negativeText: joined(0), added: added(rowOf(pooled, 0, rows)) };
  }

  private async run(part: EncoderPart, texts: readonly string[], outputs: readonly string[]): Promise<Tensor[]> {
    const ids = await paddedTokenIds(part.tokenizer, texts, this.maxLength, part.stage.tokens);
    return encoderOutputs(part.stage, ids, outputs);
  }
}

/** One of the two encoders: its tokenizer and stage. */
export interface EncoderPart {
  readonly tokenizer: TextTokenizer;
  readonly stage: EncoderStage;
}

/** [L, a] and [L, b] states joined token by token into [L, a + b] (torch.concat on the last axis). */
function joinFeatures(first: Float32Array, second: Float32Array, length: number): Float32Array {
  const a = first.length / length;
  const b = second.length / length;
  const out = new Float32Array(length * (a + b));
  for (let t = 0; t < length; t++) {
    out.set(first.subarray(t * a, (t + 1) * a), t * (a + b));
    out.set(second.subarray(t * b, (t + 1) * b), t * (a + b) + a);
  }
  return out;
}
