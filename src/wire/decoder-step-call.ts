import type { SamplingParams } from '../spec/sampling-params.js';
import type { DecoderStepRow } from '../spec/decoder-step.js';
import type { StructuredOutput } from '../spec/structured-output.js';

/** What a generator's instance boots from: an ONNX decoder export, or a GGUF file on llama.cpp. */
export type DecoderPlan = OnnxDecoderPlan | GgufDecoderPlan;

/** A generative model folder's decoder export and the backend's session options. */
export interface OnnxDecoderPlan {
  readonly kind: 'decoder';
  readonly runtime?: 'onnx';
  /** Absolute path of the folder's model.onnx. */
  readonly file: string;
  readonly sessionOptions: Readonly<Record<string, unknown>>;
  /** config.json's vocab_size, for an export whose logits' last dimension is symbolic. */
  readonly vocabSize?: number;
  /** Where the instance reads the vocabulary its grammar engine needs, on the first structured output. */
  readonly grammarVocabulary?: TokenizerFileVocabulary;
}

/** A folder's tokenizer.json as the grammar engine's vocabulary, masks as wide as the logits (`vocabSize`, the padded vocabulary). */
export interface TokenizerFileVocabulary {
  readonly tokenizerFile: string;
  readonly vocabSize: number;
  readonly stopTokenIds: readonly number[];
}

/**
 * A @GenerativeModel class's instance: the class itself is hosted as any decorated class is, and
 * its grammar engine reads the tokenizer.json of the class's folder, as a decoder folder's does.
 */
export interface GeneratorClassPlan {
  readonly kind: 'generator-class';
  readonly grammarVocabulary: TokenizerFileVocabulary;
}

/** A `.gguf` file run by node-llama-cpp (src/instance/gguf-runtime.ts) with a context sequence per scheduler sequence. */
export interface GgufDecoderPlan {
  readonly kind: 'decoder';
  readonly runtime: 'gguf';
  /** Absolute path of the .gguf file. */
  readonly file: string;
  readonly maxNumSeqs: number;
  readonly maxModelLen: number;
  readonly maxNumBatchedTokens: number;
}

/**
 * One iteration of a generator's scheduler as it crosses to the instance that holds the decoder's
 * caches: the rows to run, the sequences to drop first, and for each row that ends its prompt or
 * decodes, what the sampler needs. Only sampled token ids (and logprobs when asked for) come back,
 * never a vocabulary-wide row.
 */
export interface DecoderStepCall {
  readonly kind: 'decoder-step';
  /** Sequences that finished, were cancelled or preempted since the last step: their caches go first. */
  readonly release: readonly number[];
  readonly rows: readonly DecoderCallRow[];
}

/** How a sequence samples, sent on its first row (and again when it is recomputed after a preemption). */
export interface SequenceStart {
  readonly sampling: SamplingParams;
  readonly promptLength: number;
  /** Stop tokens min_tokens holds back: the end-of-sequence ids (unless ignore_eos) and stop_token_ids. */
  readonly stopTokenIds: readonly number[];
  /** The grammar the sequence's output follows: the instance compiles it (cached by spec), masks each sampled token and accepts it. */
  readonly structuredOutput?: StructuredOutput;
}

export interface DecoderCallRow extends DecoderStepRow {
  readonly start?: SequenceStart;
  /** Sample the next token from this row's last position (a decode, or the chunk that ends the prompt). */
  readonly sample: boolean;
  /** A prefix-cache hit: the runtime copies the first `cachedLength` tokens of this sequence's cache first. */
  readonly copyFrom?: number;
}

export interface DecoderRowResult {
  /** The sampled token, when the row asked for one. */
  readonly token?: { readonly tokenId: number; readonly logprob: number; readonly top?: readonly { readonly tokenId: number; readonly logprob: number }[] };
  /** With a structured output: `rejected` when the grammar refused the sampled token, `ended` when the token completed it. */
  readonly grammar?: 'rejected' | 'ended';
  /** Logprobs of this chunk's prompt tokens (vLLM's prompt_logprobs), undefined for the sequence's first token. */
  readonly promptLogprobs?: readonly ({ readonly tokenId: number; readonly logprob: number; readonly top?: readonly { readonly tokenId: number; readonly logprob: number }[] } | undefined)[];
}
