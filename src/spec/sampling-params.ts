/**
 * One request's sampling, as the protocols fill it and the instance's sampler applies it
 * (declared here, dependency-free, because both sides of the thread boundary read it; re-exported
 * by src/generation/text-generator.ts). Field meanings follow vLLM's `SamplingParams`
 * (https://docs.vllm.ai/en/latest/api/vllm/sampling_params.html).
 */

/** One request's sampling: what the scheduler's sampler applies to that sequence's logits. */
export interface SamplingParams {
  /** 0 = greedy. */
  readonly temperature: number;
  readonly topP: number;
  /** 0 or -1 = off. */
  readonly topK: number;
  readonly minP: number;
  /** A per-request generator, so a seeded result does not depend on what else is in the batch. */
  readonly seed?: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly repetitionPenalty: number;
  /** Token id → bias added to its logit. */
  readonly logitBias?: ReadonlyMap<number, number>;
  /** Top alternatives returned per generated token (0 = the chosen token's logprob only); undefined = none. */
  readonly logprobs?: number;
  /** Top alternatives returned per prompt token (`echo` with logprobs, vLLM's `prompt_logprobs`); undefined = none. */
  readonly promptLogprobs?: number;
  readonly maxTokens: number;
  readonly minTokens: number;
  /** Stop tokens beside the model's end-of-sequence ids (which apply unless `ignoreEos`). */
  readonly stopTokenIds: readonly number[];
  readonly ignoreEos: boolean;
}

export interface TokenLogprob {
  readonly tokenId: number;
  readonly logprob: number;
}
