import type { TextPiece } from '../../generation/generation-text.js';
import { ReasoningParser, type ReasoningStart } from '../../generation/reasoning-parser.js';
import { toolCallId, ToolCallParser, type ToolCallDelta } from '../../generation/tool-call-parser.js';
import type { FinishReason } from '../../generation/text-generator.js';
import type { ToolChoice } from './chat-request.js';

/** What one piece of output adds to a chat choice. */
export interface ChatDelta {
  readonly reasoning: string;
  readonly content: string;
  /** Pieces of tool calls (a call's first carries its id and name), as vLLM streams them. */
  readonly toolCalls: readonly ToolCallDelta[];
}

export interface ChatChoiceOptions {
  /** Set when the template writes `<think>` blocks: where the output starts (from the rendered prompt's tail). */
  readonly reasoningStart?: ReasoningStart;
  /** Parse `<tool_call>` blocks (tools offered, tool_choice auto, a template that asks for them). */
  readonly parseToolCalls: boolean;
  /** A `required` or named tool choice: the whole (grammar-constrained) output is the call(s), as vLLM reads it. */
  readonly forcedTools?: ToolChoice;
}

/**
 * One chat choice's output split into reasoning, content and tool calls as it streams. Tool calls
 * of a forced choice (`required` / named) are read from the whole output at its end, as vLLM does.
 */
export class ChatChoice {
  private readonly reasoning?: ReasoningParser;
  private readonly tools?: ToolCallParser;
  private forcedText = '';
  private calls = 0;

  constructor(private readonly options: ChatChoiceOptions) {
    if (options.reasoningStart) this.reasoning = new ReasoningParser(options.reasoningStart);
    if (options.parseToolCalls && !options.forcedTools) this.tools = new ToolCallParser();
  }

  push(piece: TextPiece): ChatDelta {
    const last = piece.finishReason !== undefined;
    let reasoning = '';
    let content = piece.text;
    if (this.reasoning) {
      const split = this.reasoning.push(piece.text);
      const rest = last ? this.reasoning.flush() : { reasoning: '', content: '' };
      reasoning = split.reasoning + rest.reasoning;
      content = split.content + rest.content;
    }
    let toolCalls: ToolCallDelta[] = [];
    if (this.options.forcedTools) {
      this.forcedText += content;
      content = '';
      if (last) toolCalls = forcedCalls(this.options.forcedTools, this.forcedText);
      if (last && toolCalls.length === 0) content = this.forcedText;
    } else if (this.tools) {
      const split = this.tools.push(content);
      const rest = last ? this.tools.flush() : { content: '', calls: [] };
      content = split.content + rest.content;
      toolCalls = [...split.calls, ...rest.calls];
    }
    this.calls += toolCalls.filter((call) => call.name !== undefined).length;
    return { reasoning, content, toolCalls };
  }

  /** vLLM reports `tool_calls` once a call was parsed (for an output that otherwise stopped or ran out). */
  finishReason(reason: FinishReason): string {
    return this.calls > 0 ? 'tool_calls' : reason;
  }

  get callCount(): number {
    return this.calls;
  }
}

function toolCall(name: string, args: unknown, index: number): ToolCallDelta {
  return { index, id: toolCallId(), name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) };
}

/** A named choice's output is the arguments; `required`'s is `[{name, parameters}, ...]` (vLLM's schema for them). */
function forcedCalls(choice: ToolChoice, text: string): ToolCallDelta[] {
  if (choice.kind === 'named') return [toolCall(choice.name, text, 0)];
  try {
    const calls = JSON.parse(text) as { name?: unknown; parameters?: unknown }[];
    if (!Array.isArray(calls)) return [];
    return calls.filter((c) => typeof c?.name === 'string').map((c, index) => toolCall(c.name as string, c.parameters, index));
  } catch {
    return [];
  }
}
