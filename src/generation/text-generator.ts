/**
 * What the protocols (OpenAI / vLLM chat and completions, KServe v2 generate) ask of a served
 * generative model, and what its iteration-level scheduler gives back. Sampling field meanings
 * follow vLLM's `SamplingParams` (https://docs.vllm.ai/en/latest/api/vllm/sampling_params.html).
 */

export type { SamplingParams, TokenLogprob } from '../spec/sampling-params.js';
export type { StructuredOutput } from '../spec/structured-output.js';
import type { SamplingParams, TokenLogprob } from '../spec/sampling-params.js';
import type { StructuredOutput } from '../spec/structured-output.js';

export interface GenerationRequest {
  readonly requestId: string;
  readonly promptTokenIds: readonly number[];
  readonly sampling: SamplingParams;
  /** The grammar the output must follow: the instance compiles it and masks every sampled token (src/instance/grammar-matchers.ts). */
  readonly structuredOutput?: StructuredOutput;
  /** Aborted when the client goes away: the sequence leaves the running set at the next step and its KV blocks are freed. */
  readonly signal?: AbortSignal;
}

export interface GeneratedToken extends TokenLogprob {
  /** The best alternatives at this position, highest first (when logprobs were asked for). */
  readonly top?: readonly TokenLogprob[];
}

/** `stop`: an end-of-sequence or stop token, a matched stop string or a finished grammar; `length`: max tokens or the context; `abort`: cancelled. */
export type FinishReason = 'stop' | 'length' | 'abort';

/** What one step produced for one request: the new tokens and, on the last chunk, why it ended. */
export interface GenerationChunk {
  readonly tokens: readonly GeneratedToken[];
  /** Prompt token logprobs, on the first chunk only, when `promptLogprobs` was asked for (the first prompt token has none). */
  readonly promptLogprobs?: readonly (GeneratedToken | undefined)[];
  readonly finishReason?: FinishReason;
  /** The stop token that ended the sequence (vLLM's `stop_reason`), when one did. */
  readonly stopTokenId?: number;
}

/** A running generation: its chunks in order; the iterator ends after the chunk carrying `finishReason`. */
export interface Generation extends AsyncIterable<GenerationChunk> {
  /** Ends the sequence at the next step with finish reason `stop`: the protocol matched a stop string. */
  stop(): void;
}

/** A served generative model, whatever runs it (an ONNX decoder export, a GGUF file, a class's step hook). */
export interface TextGenerator {
  readonly name: string;
  /** The context length: `max_position_embeddings`, or `--max-model-len`. */
  readonly maxModelLen: number;
  readonly vocabSize: number;
  /** Every end-of-sequence id (`generation_config.json`'s `eos_token_id`, a list for Qwen3). */
  readonly eosTokenIds: readonly number[];
  /** `generation_config.json`'s sampling defaults, applied where a request sets nothing (vLLM's `--generation-config auto`). */
  readonly defaults: Partial<SamplingParams>;
  /** True once the model can serve (`/health` answers 200). */
  ready(): boolean;
  /** Throws a ServeFnError for a request the model cannot take (too long for the context). */
  generate(request: GenerationRequest): Generation;
}

/** The tokenizer a generator's protocols use: the folder's tokenizer.json, or the one a GGUF file embeds. */
export interface PromptTokenizer {
  /** Special tokens written in the text are parsed as Hugging Face tokenizers parse them. */
  encode(text: string, addSpecialTokens: boolean): Promise<number[]>;
  decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string>;
  /** The vocabulary entry of one id (logprobs' `token` fields). */
  tokenText(id: number): string | undefined;
}

/** The chat template a folder ships: tokenizer_config.json's `chat_template` (or a GGUF's `tokenizer.chat_template`) and the special tokens it refers to. */
export interface ChatTemplateSource {
  readonly template: string;
  readonly bosToken?: string;
  readonly eosToken?: string;
}

/**
 * Checks a structured output before its request is accepted (a ServeFnError, 400, for an invalid
 * schema or pattern), so a stream's 400 comes before its 200. Checking needs no vocabulary; the
 * instance compiles and masks.
 */
export type StructuredOutputCheck = (output: StructuredOutput) => Promise<void>;

/** One generative model as the server serves it: what the protocol routes receive. */
export interface ServedGenerator {
  readonly generator: TextGenerator;
  readonly tokenizer: PromptTokenizer;
  readonly chatTemplate?: ChatTemplateSource;
  /**
   * Every generator the server loads (a folder, a GGUF file, a @GenerativeModel class) has one;
   * absent for an embedder's generator with no grammar engine: structured outputs are then refused with a 400.
   */
  readonly structuredOutputs?: StructuredOutputCheck;
  /** Its version on /v2: a @GenerativeModel class's @Model version; '1' when absent (a folder). */
  readonly version?: string;
}
