import { createError } from '../errors/index.js';
import { generationText } from '../generation/generation-text.js';
import type { ServedGenerator } from '../generation/text-generator.js';
import type { ResponseStream, StreamedInferResponse, StreamingInferenceModel } from '../inference/decoupled-model.js';
import type { InferenceModelInfo, InferRequest, InferResponse, RepositoryIndexEntry } from '../inference/inference-model.js';
import type { ServerModel } from '../inference/model-catalogue.js';
import { validateInferRequest } from '../inference/request-validation.js';
import type { Tensor, TensorSpec } from '../spec/tensor.js';
import { createTensor } from '../tensor/tensor-factory.js';
import { checkContext } from './openai/generation-choices.js';
import { RequestFields } from './openai/request-fields.js';
import { readSamplingFields, resolveMaxTokens, type SamplingFields } from './openai/sampling-fields.js';

/** Triton's vLLM backend names its backend `vllm`; serve-fn runs its own engine, so it names itself. */
const PLATFORM = 'serve-fn';
/** vLLM's SamplingParams default, which Triton's vLLM backend keeps. */
const DEFAULT_MAX_TOKENS = 16;

const flag = (name: string): TensorSpec => ({ name, datatype: 'BOOL', shape: [1], optional: true });
/** The inputs and outputs of Triton's vLLM backend model (triton-inference-server/vllm_backend, src/model.py). */
const INPUTS: readonly TensorSpec[] = [
  { name: 'text_input', datatype: 'BYTES', shape: [1] },
  flag('stream'),
  { name: 'sampling_parameters', datatype: 'BYTES', shape: [1], optional: true },
  flag('exclude_input_in_output'),
  flag('return_finish_reason'),
  flag('return_num_input_tokens'),
  flag('return_num_output_tokens'),
];
const OUTPUTS: readonly TensorSpec[] = [
  { name: 'text_output', datatype: 'BYTES', shape: [-1] },
  { name: 'finish_reason', datatype: 'BYTES', shape: [-1] },
  { name: 'num_input_tokens', datatype: 'UINT32', shape: [1] },
  { name: 'num_output_tokens', datatype: 'UINT32', shape: [1] },
];

interface Prepared {
  readonly prompt: string;
  readonly promptTokenIds: readonly number[];
  readonly fields: SamplingFields;
  readonly maxTokens: number;
  readonly flags: { readonly excludeInput: boolean; readonly finishReason: boolean; readonly inputTokens: boolean; readonly outputTokens: boolean };
  readonly wanted: readonly string[];
}

/**
 * A served generator as a KServe v2 model, shaped as Triton's vLLM backend model so that Triton's
 * generate extension (`/v2/models/{m}/generate` and `generate_stream`, `text_input` → `text_output`),
 * gRPC ModelStreamInfer and Triton's clients (genai-perf) work unchanged: decoupled as that model is,
 * sampling from the `sampling_parameters` JSON input or, without it, the request's parameters (vLLM's
 * SamplingParams names), the prompt prepended to a whole answer unless `exclude_input_in_output`.
 */
export class GeneratorInferenceModel implements ServerModel, StreamingInferenceModel {
  readonly info: InferenceModelInfo;

  constructor(private readonly served: ServedGenerator) {
    const name = served.generator.name;
    const tensorConfig = (t: TensorSpec) => ({ name: t.name, data_type: `TYPE_${t.datatype === 'BYTES' ? 'STRING' : t.datatype}`, dims: [...t.shape], ...(t.optional ? { optional: true } : {}) });
    this.info = {
      name, version: served.version ?? '1', platform: PLATFORM, inputs: INPUTS, outputs: OUTPUTS, maxBatchSize: 0, decoupled: true,
      config: {
        name, platform: PLATFORM, backend: PLATFORM, max_batch_size: 0, model_transaction_policy: { decoupled: true },
        input: INPUTS.map(tensorConfig), output: OUTPUTS.map(tensorConfig),
        parameters: { max_model_len: { string_value: String(served.generator.maxModelLen) } },
      },
    };
  }

  ready(): boolean {
    return this.served.generator.ready();
  }

  indexEntry(): RepositoryIndexEntry {
    const { name, version } = this.info;
    return this.ready() ? { name, version, state: 'READY' } : { name, version, state: 'UNAVAILABLE', reason: 'the generator is loading' };
  }

  /** The whole answer as one response (the generate route's non-streaming form). */
  async infer(request: InferRequest): Promise<InferResponse> {
    const prepared = await this.prepare(request);
    let text = prepared.flags.excludeInput ? '' : prepared.prompt;
    let tokens = 0;
    let finish = 'stop';
    for await (const piece of this.pieces(prepared, request)) {
      text += piece.text;
      tokens += piece.tokens.length;
      if (piece.finishReason) finish = piece.finishReason;
    }
    return this.response(request, prepared, text, tokens, finish);
  }

  /** One response per text delta, the last marked final with its finish reason (generate_stream, ModelStreamInfer). */
  async inferStream(request: InferRequest): Promise<ResponseStream> {
    const prepared = await this.prepare(request);
    const pieces = this.pieces(prepared, request);
    const self = this;
    let cancelled = false;
    async function* responses(): AsyncGenerator<StreamedInferResponse> {
      let tokens = 0;
      for await (const piece of pieces) {
        if (cancelled) return;
        tokens += piece.tokens.length;
        if (piece.text === '' && !piece.finishReason) continue;
        yield { ...self.response(request, prepared, piece.text, tokens, piece.finishReason), final: piece.finishReason !== undefined };
      }
    }
    const stream = responses();
    return {
      [Symbol.asyncIterator]: () => stream,
      cancel: () => {
        cancelled = true;
        void pieces.return(undefined);
      },
    };
  }

  private pieces(prepared: Prepared, request: InferRequest) {
    const { fields, promptTokenIds } = prepared;
    const sampling = { ...fields.sampling, maxTokens: prepared.maxTokens };
    const generation = this.served.generator.generate({ requestId: request.id ?? 'kserve', promptTokenIds, sampling, ...(request.signal ? { signal: request.signal } : {}) });
    return generationText(generation, this.served.tokenizer, { promptTokenIds, stop: fields.stop, includeStopString: fields.includeStopString, skipSpecialTokens: fields.skipSpecialTokens, minTokens: sampling.minTokens });
  }

  private response(request: InferRequest, prepared: Prepared, text: string, outputTokens: number, finish: string | undefined): InferResponse {
    const outputs: Tensor[] = [createTensor('text_output', 'BYTES', [1], [text])];
    if (prepared.flags.finishReason && finish) outputs.push(createTensor('finish_reason', 'BYTES', [1], [finish]));
    if (prepared.flags.inputTokens) outputs.push(createTensor('num_input_tokens', 'UINT32', [1], [prepared.promptTokenIds.length]));
    if (prepared.flags.outputTokens) outputs.push(createTensor('num_output_tokens', 'UINT32', [1], [outputTokens]));
    const wanted = prepared.wanted;
    return { modelName: this.info.name, modelVersion: this.info.version, id: request.id, outputs: wanted.length === 0 ? outputs : outputs.filter((t) => wanted.includes(t.name)) };
  }

  private async prepare(request: InferRequest): Promise<Prepared> {
    const { wire } = validateInferRequest(this.info, request);
    const input = (name: string): Tensor | undefined => wire.inputs.find((t) => t.name === name);
    const text = (name: string): string | undefined => {
      const tensor = input(name);
      return tensor && new TextDecoder().decode((tensor.data as Uint8Array[])[0]);
    };
    const bool = (name: string): boolean => (input(name)?.data as Uint8Array | undefined)?.[0] === 1;
    const prompt = text('text_input')!;
    const json = text('sampling_parameters');
    let params: unknown = wire.parameters;
    if (json !== undefined) {
      try {
        params = JSON.parse(json);
      } catch (err) {
        throw createError('SF_ERR_BAD_REQUEST', `'sampling_parameters' is not valid JSON: ${(err as Error).message}`, { cause: err });
      }
    }
    const { generator, tokenizer } = this.served;
    const fields = readSamplingFields(new RequestFields(params), generator, {});
    if (fields.n !== 1) throw createError('SF_ERR_BAD_REQUEST', "Triton's generate extension answers one sequence per request: 'n' must be 1");
    const promptTokenIds = await tokenizer.encode(prompt, true);
    const maxTokens = resolveMaxTokens(fields.maxTokens, DEFAULT_MAX_TOKENS, generator);
    checkContext(generator, promptTokenIds.length, maxTokens);
    return {
      prompt,
      promptTokenIds,
      fields,
      maxTokens,
      flags: { excludeInput: bool('exclude_input_in_output'), finishReason: bool('return_finish_reason'), inputTokens: bool('return_num_input_tokens'), outputTokens: bool('return_num_output_tokens') },
      wanted: wire.outputs,
    };
  }
}
