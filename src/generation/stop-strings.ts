import { heldBackLength } from './held-back.js';

/** What the stop-string check lets through for one delta; `stop` is the string that matched, when one did. */
export interface StopCheck {
  readonly text: string;
  readonly stop?: string;
}

/**
 * vLLM's stop strings (`stop`, `include_stop_str_in_output`; vllm/v1/engine/detokenizer.py): the
 * output ends at the first occurrence of any of them, which is cut off unless the request asks to
 * keep it. Text that may be the beginning of a stop string is held back until the next delta shows
 * it is not, so a stream never sends what the final answer does not contain. vLLM holds back the
 * longest stop string's length less one; this holds back only a real partial match.
 */
export class StopStringMatcher {
  private held = '';
  private done = false;

  constructor(
    private readonly stops: readonly string[],
    private readonly includeStopString: boolean,
  ) {}

  /** `active` false lets text through unchecked (vLLM checks no stop string before `min_tokens`). */
  push(delta: string, active = true): StopCheck {
    if (this.done) return { text: '' };
    const text = this.held + delta;
    this.held = '';
    if (this.stops.length === 0) return { text };
    if (!active) return { text };
    let first: { at: number; stop: string } | undefined;
    for (const stop of this.stops) {
      const at = text.indexOf(stop);
      if (at >= 0 && (first === undefined || at < first.at || (at === first.at && stop.length > first.stop.length))) first = { at, stop };
    }
    if (first) {
      this.done = true;
      return { text: text.slice(0, first.at + (this.includeStopString ? first.stop.length : 0)), stop: first.stop };
    }
    const hold = heldBackLength(text, this.stops);
    this.held = text.slice(text.length - hold);
    return { text: text.slice(0, text.length - hold) };
  }

  /** The output ended: what was held back could not become a stop string after all. */
  flush(): string {
    const text = this.held;
    this.held = '';
    return this.done ? '' : text;
  }
}
