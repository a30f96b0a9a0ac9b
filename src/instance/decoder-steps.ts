import type { DecoderRuntime } from '../spec/decoder-step.js';
import type { ConstraintVocabulary } from '../spec/structured-output.js';
import type { DecoderCallRow, DecoderRowResult, DecoderStepCall, SequenceStart } from '../wire/decoder-step-call.js';
import { GrammarMatchers, type SequenceGrammar } from './grammar-matchers.js';
import { logSoftmax, MAX_LOGPROBS, sampleToken, topEntries, uniformFor } from './token-sampler.js';

interface SequenceState {
  readonly start: SequenceStart;
  /** The tokens the runtime's cache holds for the sequence, in order: what the penalties count. */
  readonly history: number[];
  /** Log-softmax of the last position of a prompt chunk that did not end the prompt: it scores the next chunk's first token. */
  pendingPrompt?: Float32Array;
  /** The matcher of a sequence with a structured output. */
  grammar?: SequenceGrammar;
}

type Logprob = { readonly tokenId: number; readonly logprob: number; readonly top?: readonly { readonly tokenId: number; readonly logprob: number }[] };

/**
 * The instance side of a generator's iteration: runs a decoder step on the runtime, then samples
 * each row that asks for a token (token-sampler.ts), keeping each sequence's token history for
 * the penalties, and each constrained sequence's grammar matcher (grammar-matchers.ts), which masks
 * the logits before sampling and accepts the sampled token, so no mask is computed on the HTTP thread.
 * Used by the instance host of a decoder folder and by a generator class's host alike.
 */
export class DecoderSteps {
  private readonly sequences = new Map<number, SequenceState>();
  private readonly grammars: GrammarMatchers | undefined;

  /** `vocabulary`: what the grammar engine reads on the first structured output; without it, a structured output fails its step. */
  constructor(
    readonly runtime: DecoderRuntime,
    vocabulary?: () => Promise<ConstraintVocabulary>,
  ) {
    this.grammars = vocabulary ? new GrammarMatchers(vocabulary) : undefined;
  }

  async run(call: DecoderStepCall): Promise<DecoderRowResult[]> {
    if (call.release.length > 0) {
      this.runtime.release(call.release);
      for (const id of call.release) this.drop(id);
    }
    const states = await Promise.all(call.rows.map(async (row) => {
      let state = this.sequences.get(row.sequenceId);
      if (row.start) {
        // A new sequence, or one recomputed after a preemption: a fresh matcher replays its output.
        this.drop(row.sequenceId);
        state = { start: row.start, history: [], ...(row.start.structuredOutput ? { grammar: await this.matcher(row.start) } : {}) };
        this.sequences.set(row.sequenceId, state);
      }
      if (row.copyFrom !== undefined) {
        this.runtime.copyPrefix!(row.copyFrom, row.sequenceId, row.cachedLength);
        state?.history.push(...(this.sequences.get(row.copyFrom)?.history.slice(0, row.cachedLength) ?? []));
      }
      if (!state) throw new Error(`sequence ${row.sequenceId} has no start`);
      return state;
    }));
    const { rows } = await this.runtime.step(call.rows);
    const vocab = this.runtime.vocabSize;
    const results: DecoderRowResult[] = [];
    for (const [i, row] of call.rows.entries()) results.push(await this.sample(row, states[i]!, rows[i], vocab));
    return results;
  }

  private async sample(row: DecoderCallRow, state: SequenceState, logits: Float32Array | undefined, vocab: number): Promise<DecoderRowResult> {
    state.history.length = row.cachedLength;
    const promptLogprobs = row.logits === 'all' && logits ? this.promptLogprobs(state, row.tokenIds, logits, vocab) : undefined;
    state.history.push(...row.tokenIds);
    if (!row.sample || !logits) return promptLogprobs ? { promptLogprobs } : {};
    const last = logits.length === vocab ? logits : logits.subarray(logits.length - vocab);
    const { sampling, promptLength, stopTokenIds } = state.start;
    const { grammar } = state;
    grammar?.follow(state.history.slice(promptLength));
    const allowed = await grammar?.nextTokenBitmask();
    const token = sampleToken({ logits: last, sampling, history: state.history, promptLength, stopTokenIds, ...(allowed ? { allowed } : {}) }, uniformFor(sampling, state.history.length - promptLength));
    const ended = grammar ? (!grammar.acceptToken(token.tokenId) ? 'rejected' : grammar.isTerminated() ? 'ended' : undefined) : undefined;
    return { token, ...(promptLogprobs ? { promptLogprobs } : {}), ...(ended ? { grammar: ended } : {}) };
  }

  private async matcher(start: SequenceStart): Promise<SequenceGrammar> {
    if (!this.grammars) throw new Error('this instance has no vocabulary for structured outputs');
    return this.grammars.matcher(start.structuredOutput!);
  }

  private drop(sequenceId: number): void {
    this.sequences.get(sequenceId)?.grammar?.dispose();
    this.sequences.delete(sequenceId);
  }

  /** Each prompt token's logprob given the tokens before it (the sequence's first token has none). */
  private promptLogprobs(state: SequenceState, tokens: readonly number[], logits: Float32Array, vocab: number): (Logprob | undefined)[] {
    const count = Math.min(state.start.sampling.promptLogprobs ?? 0, MAX_LOGPROBS);
    const score = (row: Float32Array, tokenId: number): Logprob => {
      const scored = { tokenId, logprob: row[tokenId]! };
      return count > 0 ? { ...scored, top: topEntries(row, count).map((id) => ({ tokenId: id, logprob: row[id]! })) } : scored;
    };
    const out: (Logprob | undefined)[] = [];
    const startsPrompt = state.history.length === 0;
    out.push(startsPrompt || !state.pendingPrompt ? undefined : score(state.pendingPrompt, tokens[0]!));
    let row: Float32Array | undefined;
    for (let k = 0; k < tokens.length; k++) {
      row = logSoftmax(logits.subarray(k * vocab, (k + 1) * vocab));
      if (k + 1 < tokens.length) out.push(score(row, tokens[k + 1]!));
    }
    state.pendingPrompt = row;
    return out;
  }
}
