import { createError } from '../errors/index.js';
import type { TensorModelVersion } from '../inference/tensor-model-version.js';
import type { Tensor, TensorSpec } from '../spec/tensor.js';
import type { TextTokenizer } from '../tokenizer/tokenizer.js';
import type { AddedCondition } from './denoise-work.js';

/** What a prompt is encoded for: guidance decides whether the unconditional branch is encoded too. */
export interface PromptRequest {
  readonly prompt: string;
  /** The unconditional branch; undefined when the request names none. */
  readonly negativePrompt?: string;
  readonly width: number;
  readonly height: number;
  readonly guided: boolean;
}

/** The denoiser's conditioning for one image: the text states (with guidance, the negative's too) and any added conditions. */
export interface PromptEncoding {
  /** The prompt's states, [1, L, D]. */
  readonly text: Float32Array;
  readonly textShape: number[];
  readonly negativeText?: Float32Array;
  /** Further denoiser inputs (SDXL's text_embeds and time_ids), a row per branch. */
  readonly added: readonly AddedCondition[];
}

/** A pipeline's prompt encoding: one text encoder (here) or SDXL's two (dual-text-encoding.ts). */
export interface PromptEncoder {
  encode(request: PromptRequest): Promise<PromptEncoding>;
}

/** One text encoder's stage, its `input_ids` input and the output read from it. */
export interface EncoderStage {
  readonly model: TensorModelVersion;
  readonly tokens: TensorSpec;
}

/**
 * `texts` through the tokenizer, cut and padded to `length` with the tokenizer's own pad token,
 * as the pipelines call it (`padding="max_length", max_length=tokenizer.model_max_length,
 * truncation=True`), as one [texts, length] `input_ids` tensor of the encoder's dtype.
 */
export async function paddedTokenIds(tokenizer: TextTokenizer, texts: readonly string[], length: number, tokens: TensorSpec): Promise<Tensor> {
  const ids = tokens.datatype === 'INT64' ? new BigInt64Array(texts.length * length) : new Int32Array(texts.length * length);
  for (const [row, text] of texts.entries()) {
    const encoding = await tokenizer.encode(text, { maxLength: length });
    for (let i = 0; i < length; i++) {
      const id = i < encoding.ids.length ? encoding.ids[i] : tokenizer.padId;
      if (ids instanceof BigInt64Array) ids[row * length + i] = BigInt(id);
      else ids[row * length + i] = id;
    }
  }
  return { name: tokens.name, datatype: tokens.datatype, shape: [texts.length, length], data: ids };
}

/** Runs an encoder stage on `input_ids` and returns the named outputs, in the order asked. */
export async function encoderOutputs(stage: EncoderStage, ids: Tensor, names: readonly string[]): Promise<Tensor[]> {
  const response = await stage.model.infer({ inputs: [ids], outputs: names.map((name) => ({ name })) });
  return names.map((name) => response.outputs.find((o) => o.name === name) ?? missing(stage, name));
}

function missing(stage: EncoderStage, name: string): never {
  throw createError('SF_ERR_EXECUTION_FAILED', stage.model.info.name, 'the prompt encoding', `no output ${name} in its answer`);
}

/** Row `row` of a [rows, ...] tensor's FP32 data. */
export function rowOf(tensor: Tensor, row: number, rows: number): Float32Array {
  const data = tensor.data as Float32Array;
  const size = data.length / rows;
  return data.slice(row * size, (row + 1) * size);
}

/**
 * A one-encoder pipeline (SD 1.x/2.x, a DiT with one encoder): the prompt and, with guidance, the
 * negative prompt ('' when absent, as diffusers encodes it) through the text encoder in one call;
 * its `last_hidden_state` (else its first output) is the denoiser's encoder_hidden_states.
 */
export class SingleTextEncoding implements PromptEncoder {
  constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly stage: EncoderStage,
    private readonly output: string,
    private readonly maxLength: number,
  ) {}

  async encode(request: PromptRequest): Promise<PromptEncoding> {
    const texts = request.guided ? [request.negativePrompt ?? '', request.prompt] : [request.prompt];
    const ids = await paddedTokenIds(this.tokenizer, texts, this.maxLength, this.stage.tokens);
    const [states] = await encoderOutputs(this.stage, ids, [this.output]);
    const textShape = [1, ...states.shape.slice(1)];
    if (!request.guided) return { text: rowOf(states, 0, 1), textShape, added: [] };
    return { text: rowOf(states, 1, 2), negativeText: rowOf(states, 0, 2), textShape, added: [] };
  }
}
