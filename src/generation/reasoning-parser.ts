import { heldBackLength } from './held-back.js';

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';

/** Where the model's output starts: inside a think block, in the answer, or not yet known (the model may open one). */
export type ReasoningStart = 'reasoning' | 'content' | 'detect';

/**
 * The parser's start state, read from the rendered prompt's tail rather than from the request's
 * flags: vLLM's Qwen3 parser assumes one and puts the answer in `reasoning_content` when the
 * template already closed the block (`enable_thinking: false`; vllm-project/vllm#17349, #17609,
 * #53284). A prompt whose last `<think>` is still open (Qwen3.5, thinking-only templates) starts
 * in reasoning; one that ends right after `</think>` starts in the answer; otherwise the model
 * decides by opening a block or not (Qwen3 with thinking on).
 */
export function reasoningStart(prompt: string): ReasoningStart {
  const open = prompt.lastIndexOf(THINK_OPEN);
  const close = prompt.lastIndexOf(THINK_CLOSE);
  if (open > close) return 'reasoning';
  if (close >= 0 && prompt.slice(close + THINK_CLOSE.length).trim() === '') return 'content';
  return 'detect';
}

export interface ReasoningSplit {
  readonly reasoning: string;
  readonly content: string;
}

type State = 'detect' | 'reasoning' | 'content';

/**
 * Splits streamed output into reasoning (inside `<think>…</think>`) and the answer, with the tags
 * removed and the newlines the template writes around them trimmed, as Qwen3's model card does
 * (https://huggingface.co/Qwen/Qwen3-0.6B, "Quickstart"). A partial tag is held back until the
 * next delta shows what it is. Hand-written: no JS library parses reasoning output.
 */
export class ReasoningParser {
  private state: State;
  private buffer = '';
  /** Leading newlines of a reasoning block or of the answer after one are the template's layout, not text. */
  private trimLeading = false;

  constructor(start: ReasoningStart) {
    this.state = start;
    this.trimLeading = start === 'reasoning';
  }

  push(delta: string): ReasoningSplit {
    this.buffer += delta;
    let reasoning = '';
    let content = '';
    for (;;) {
      if (this.state === 'detect') {
        const text = this.buffer.trimStart();
        if (text.startsWith(THINK_OPEN)) {
          this.buffer = text.slice(THINK_OPEN.length);
          this.state = 'reasoning';
          this.trimLeading = true;
          continue;
        }
        if (THINK_OPEN.startsWith(text)) return { reasoning, content };
        this.state = 'content';
      }
      if (this.trimLeading) {
        this.buffer = this.buffer.replace(/^\n+/, '');
        if (this.buffer === '') return { reasoning, content };
        this.trimLeading = false;
      }
      if (this.state === 'content') {
        content += this.buffer;
        this.buffer = '';
        return { reasoning, content };
      }
      const end = this.buffer.indexOf(THINK_CLOSE);
      if (end >= 0) {
        reasoning += this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + THINK_CLOSE.length);
        this.state = 'content';
        this.trimLeading = true;
        continue;
      }
      const hold = heldBackLength(this.buffer, [THINK_CLOSE]);
      reasoning += this.buffer.slice(0, this.buffer.length - hold);
      this.buffer = this.buffer.slice(this.buffer.length - hold);
      return { reasoning, content };
    }
  }

  /** The output ended: held text belongs where the parser stands (an unclosed block is reasoning, as vLLM reports it). */
  flush(): ReasoningSplit {
    const rest = this.buffer;
    this.buffer = '';
    return this.state === 'reasoning' ? { reasoning: rest, content: '' } : { reasoning: '', content: rest };
  }
}
