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

/**
 * A piece of one call as it streams, as vLLM's tool parsers send it: the first piece of a call
 * carries its id and function name, the next ones pieces of its arguments; the pieces of a call's
 * arguments joined are its `arguments`.
 */
export interface ToolCallDelta {
  /** The call's position among the output's calls. */
  readonly index: number;
  readonly id?: string;
  readonly name?: string;
  readonly arguments?: string;
}

export interface ToolCallSplit {
  readonly content: string;
  readonly calls: readonly ToolCallDelta[];
}

/** A new call id in vLLM's form (vllm/entrypoints/openai/tool_parsers/utils.py `random_tool_call_id`). */
export function toolCallId(): string {
  return `chatcmpl-tool-${randomUUID().replaceAll('-', '')}`;
}

/** The whole calls the deltas add up to (a response that is not streamed). */
export function accumulateToolCalls(deltas: readonly ToolCallDelta[]): ParsedToolCall[] {
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const delta of deltas) {
    const call = (calls[delta.index] ??= { id: '', name: '', arguments: '' });
    if (delta.id) call.id = delta.id;
    if (delta.name) call.name = delta.name;
    if (delta.arguments) call.arguments += delta.arguments;
  }
  return calls;
}

const NAME = /^\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*/;

/** One open `<tool_call>` block: what of it has been sent. */
interface OpenCall {
  /** The block's text after `<tool_call>`. */
  body: string;
  /** Where the arguments value starts in `body`, once the name has been sent. */
  argumentsAt?: number;
  scanned: number;
  depth: number;
  inString: boolean;
  escaped: boolean;
  argumentsDone: boolean;
}

/**
 * Hermes / Qwen3 tool calls (the format Qwen3's chat template asks for, and vLLM's `hermes` tool
 * parser reads): each call is `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` in the
 * answer. Text outside the blocks is content. As vLLM's hermes parser streams a call, the name is
 * sent once it is complete, then the arguments piece by piece as the model writes them, compacted
 * (whitespace outside strings dropped, so `{"city": "Paris"}` is sent as `{"city":"Paris"}`). A
 * block whose name does not come first (`{"name": ..., "arguments": ...}`) is sent whole when it
 * closes; a block that is not a JSON call, or never closes, stays content unless its name was
 * already sent (a stream cannot take it back; vLLM's cannot either). Hand-written: no JS library
 * parses Hermes tool calls.
 */
export class ToolCallParser {
  private buffer = '';
  private open: OpenCall | undefined;
  private count = 0;

  push(delta: string): ToolCallSplit {
    this.buffer += delta;
    let content = '';
    const calls: ToolCallDelta[] = [];
    for (;;) {
      if (!this.open) {
        const at = this.buffer.indexOf(CALL_OPEN);
        if (at < 0) {
          const hold = heldBackLength(this.buffer, [CALL_OPEN]);
          content += this.buffer.slice(0, this.buffer.length - hold);
          this.buffer = this.buffer.slice(this.buffer.length - hold);
          return { content, calls };
        }
        content += this.buffer.slice(0, at);
        this.buffer = this.buffer.slice(at + CALL_OPEN.length);
        this.open = { body: '', scanned: 0, depth: 0, inString: false, escaped: false, argumentsDone: false };
      }
      const call = this.open;
      const close = this.buffer.indexOf(CALL_CLOSE);
      if (close < 0) {
        const hold = heldBackLength(this.buffer, [CALL_CLOSE]);
        call.body += this.buffer.slice(0, this.buffer.length - hold);
        this.buffer = this.buffer.slice(this.buffer.length - hold);
        this.stream(call, calls);
        return { content, calls };
      }
      call.body += this.buffer.slice(0, close);
      this.buffer = this.buffer.slice(close + CALL_CLOSE.length);
      this.open = undefined;
      this.stream(call, calls);
      if (call.argumentsAt !== undefined) {
        this.count++;
        continue;
      }
      const whole = parseCall(call.body);
      if (whole) calls.push({ index: this.count++, id: toolCallId(), name: whole.name, arguments: whole.arguments });
      else content += CALL_OPEN + call.body + CALL_CLOSE;
    }
  }

  flush(): ToolCallSplit {
    const call = this.open;
    // A block that never closed stays content, unless its name was sent.
    const rest = call && call.argumentsAt === undefined ? CALL_OPEN + call.body + this.buffer : call ? '' : this.buffer;
    if (call?.argumentsAt !== undefined) this.count++;
    this.buffer = '';
    this.open = undefined;
    return { content: rest, calls: [] };
  }

  /** Sends the name once it is complete, then the arguments written since the last call, compacted. */
  private stream(call: OpenCall, calls: ToolCallDelta[]): void {
    if (call.argumentsAt === undefined) {
      const named = NAME.exec(call.body);
      if (!named) return;
      let name: unknown;
      try {
        name = JSON.parse(`"${named[1]}"`);
      } catch {
        return;
      }
      call.argumentsAt = named[0].length;
      call.scanned = call.argumentsAt;
      calls.push({ index: this.count, id: toolCallId(), name: name as string });
    }
    let piece = '';
    for (; call.scanned < call.body.length && !call.argumentsDone; call.scanned++) {
      const ch = call.body[call.scanned]!;
      if (call.inString) {
        piece += ch;
        if (call.escaped) call.escaped = false;
        else if (ch === '\\') call.escaped = true;
        else if (ch === '"') call.inString = false;
      } else if (/\s/.test(ch)) {
        continue;
      } else if (call.depth === 0 && (ch === '}' || ch === ',')) {
        // The outer object's close (or a key after the arguments): the arguments value has ended.
        call.argumentsDone = true;
      } else {
        piece += ch;
        if (ch === '"') call.inString = true;
        else if (ch === '{' || ch === '[') call.depth++;
        else if (ch === '}' || ch === ']') {
          call.depth--;
          if (call.depth === 0) call.argumentsDone = true;
        }
      }
    }
    if (piece) calls.push({ index: this.count, arguments: piece });
  }
}

function parseCall(json: string): { name: string; arguments: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { name, arguments: args } = value as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') return undefined;
  return { name, arguments: JSON.stringify(args ?? {}) };
}
