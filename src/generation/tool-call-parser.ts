import { randomUUID } from 'node:crypto';
import { heldBackLength } from './held-back.js';

const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';

/** A function call the model wrote, in OpenAI's shape: `arguments` is a JSON string. */
export interface ParsedToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export interface ToolCallSplit {
  readonly content: string;
  readonly calls: readonly ParsedToolCall[];
}

/**
 * Hermes / Qwen3 tool calls (the format Qwen3's chat template asks for, and vLLM's `hermes` tool
 * parser reads): each call is `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` in the
 * answer. Text outside the blocks is content; a block is reported whole once it closes (vLLM
 * streams the arguments piecewise; a client's accumulation gives the same result). A block that is
 * not a JSON call, or never closes, stays content, as vLLM's parser leaves it. Hand-written: no JS
 * library parses Hermes tool calls.
 */
export class ToolCallParser {
  private buffer = '';
  private inCall = false;

  push(delta: string): ToolCallSplit {
    this.buffer += delta;
    let content = '';
    const calls: ParsedToolCall[] = [];
    for (;;) {
      if (!this.inCall) {
        const open = this.buffer.indexOf(CALL_OPEN);
        if (open < 0) {
          const hold = heldBackLength(this.buffer, [CALL_OPEN]);
          content += this.buffer.slice(0, this.buffer.length - hold);
          this.buffer = this.buffer.slice(this.buffer.length - hold);
          return { content, calls };
        }
        content += this.buffer.slice(0, open);
        this.buffer = this.buffer.slice(open);
        this.inCall = true;
      }
      const close = this.buffer.indexOf(CALL_CLOSE);
      if (close < 0) return { content, calls };
      const block = this.buffer.slice(0, close + CALL_CLOSE.length);
      this.buffer = this.buffer.slice(block.length);
      this.inCall = false;
      const call = parseCall(block.slice(CALL_OPEN.length, -CALL_CLOSE.length));
      if (call) calls.push(call);
      else content += block;
    }
  }

  flush(): ToolCallSplit {
    const rest = this.buffer;
    this.buffer = '';
    this.inCall = false;
    return { content: rest, calls: [] };
  }
}

function parseCall(json: string): ParsedToolCall | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { name, arguments: args } = value as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') return undefined;
  // vLLM's id form (vllm/entrypoints/openai/tool_parsers/utils.py `random_tool_call_id`).
  return { id: `chatcmpl-tool-${randomUUID().replaceAll('-', '')}`, name, arguments: JSON.stringify(args ?? {}) };
}
