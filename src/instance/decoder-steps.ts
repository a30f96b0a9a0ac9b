import type { DecoderRuntime } from '../spec/decoder-step.js';
import type { DecoderRowResult, DecoderStepCall, SequenceStart } from '../wire/decoder-step-call.js';
import { logSoftmax, MAX_LOGPROBS, sampleToken, topEntries, uniformFor } from './token-sampler.js';

interface SequenceState {
  readonly start: SequenceStart;
  /** The tokens the runtime's cache holds for the sequence, in order: what the penalties count. */
  readonly history: number[];
  /** Log-softmax of the last position of a prompt chunk that did not end the prompt: it scores the next chunk's first token. */
  pendingPrompt?: Float32Array;
}

type Logprob = { readonly tokenId: number; readonly logprob: number; readonly top?: readonly { readonly tokenId: number; readonly logprob: number }[] };

/**
 * The instance side of a generator's iteration: runs a decoder step on the runtime, then samples
 * each row that asks for a token (token-sampler.ts), keeping each sequence's token history for
 * the penalties. Used by the instance host of a decoder folder and by a generator class's host alike.
 */
export class DecoderSteps {
  private readonly sequences = new Map<number, SequenceState>();

  constructor(readonly runtime: DecoderRuntime) {}

  async run(call: DecoderStepCall): Promise<DecoderRowResult[]> {
    if (call.release.length > 0) {
      this.runtime.release(call.release);
      for (const id of call.release) this.sequences.delete(id);
    }
    const states = call.rows.map((row) => {
      let state = this.sequences.get(row.sequenceId);
      if (row.start) {
        state = { start: row.start, history: [] };
        this.sequences.set(row.sequenceId, state);
      }
      if (row.copyFrom !== undefined) {
        this.runtime.copyPrefix!(row.copyFrom, row.sequenceId, row.cachedLength);
        state?.history.push(...(this.sequences.get(row.copyFrom)?.history.slice(0, row.cachedLength) ?? []));
      }
      if (!state) throw new Error(`sequence ${row.sequenceId} has no start`);
      return state;
    });
    const { rows } = await this.runtime.step(call.rows);
    const vocab = this.runtime.vocabSize;
    return call.rows.map((row, i) => {
      const state = states[i]!;
      const logits = rows[i];
      state.history.length = row.cachedLength;
      const promptLogprobs = row.logits === 'all' && logits ? this.promptLogprobs(state, row.tokenIds, logits, vocab) : undefined;
      state.history.push(...row.tokenIds);
      if (!row.sample || !logits) return promptLogprobs ? { promptLogprobs } : {};
      const last = logits.length === vocab ? logits : logits.subarray(logits.length - vocab);
      const { sampling, promptLength, stopTokenIds } = state.start;
      const token = sampleToken({ logits: last, sampling, history: state.history, promptLength, stopTokenIds, allowed: row.allowed }, uniformFor(sampling, state.history.length - promptLength));
      return promptLogprobs ? { token, promptLogprobs } : { token };
    });
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
