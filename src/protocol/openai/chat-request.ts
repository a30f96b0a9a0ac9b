import type { TemplateMessage } from '../../generation/chat-template.js';
import { templateKwargs } from '../../generation/chat-template.js';
import { FieldError } from './openai-fields.js';
import type { RequestFields } from './request-fields.js';
import { checkLogprobsCount } from './sampling-fields.js';

/** A function the client offers (OpenAI's `tools[]`), as the template and the tool-choice grammar read it. */
export interface ToolSpec {
  readonly type: 'function';
  readonly function: { readonly name: string; readonly description?: string; readonly parameters?: object };
}

export type ToolChoice = { readonly kind: 'none' | 'auto' | 'required' } | { readonly kind: 'named'; readonly name: string };

/** What a chat request asks beyond sampling: the conversation, its template options, tools and the answer's shape. */
export interface ChatRequest {
  readonly messages: TemplateMessage[];
  readonly tools?: readonly ToolSpec[];
  readonly toolChoice: ToolChoice;
  readonly addGenerationPrompt: boolean;
  readonly continueFinalMessage: boolean;
  readonly addSpecialTokens: boolean;
  readonly kwargs: Record<string, unknown>;
  readonly documents?: readonly unknown[];
  readonly echo: boolean;
  /** Alternatives per token when logprobs were asked for (0 = the chosen token only); undefined = none. */
  readonly logprobs?: number;
  /** vLLM's `include_reasoning` (default true): false drops the reasoning from the answer. */
  readonly includeReasoning: boolean;
}

/**
 * Reads a chat completion request's own fields as vLLM's ChatCompletionRequest does
 * (vllm/entrypoints/openai/chat_completion/protocol.py), with its 400s: `top_logprobs` without
 * `logprobs`, an empty `tools`, `tool_choice` without tools or naming a tool not offered.
 */
export function readChatRequest(fields: RequestFields): ChatRequest {
  const rawMessages = fields.take('messages');
  if (!Array.isArray(rawMessages) || rawMessages.length === 0) throw new FieldError('messages', '`messages` must be a non-empty list of messages');
  const messages = rawMessages.map((message, i) => readMessage(message, i));
  const logprobs = fields.boolean('logprobs') ?? false;
  const top = checkLogprobsCount('top_logprobs', fields.integer('top_logprobs'));
  if (top !== undefined && top > 0 && !logprobs) throw new FieldError('top_logprobs', 'when using `top_logprobs`, `logprobs` must be set to true.');
  const tools = readTools(fields);
  const addGenerationPrompt = fields.boolean('add_generation_prompt') ?? true;
  const continueFinalMessage = fields.boolean('continue_final_message') ?? false;
  if (addGenerationPrompt && continueFinalMessage) throw new FieldError('continue_final_message', 'Cannot set both `continue_final_message` and `add_generation_prompt` to True.');
  // vLLM refuses a request's own template unless started with --trust-request-chat-template: a
  // template is code (a loop in one could hold the event loop), so serve-fn always refuses it.
  if (fields.take('chat_template') !== undefined) throw new FieldError('chat_template', 'Chat template is passed with request, but this server does not accept templates from requests: the model\'s own template applies.');
  const documents = fields.array('documents');
  const reasoningEffort = fields.string('reasoning_effort');
  return {
    messages,
    ...(tools ? { tools } : {}),
    toolChoice: readToolChoice(fields, tools),
    addGenerationPrompt,
    continueFinalMessage,
    addSpecialTokens: fields.boolean('add_special_tokens') ?? false,
    kwargs: templateKwargs(fields.object('chat_template_kwargs'), reasoningEffort),
    ...(documents ? { documents } : {}),
    echo: fields.boolean('echo') ?? false,
    ...(logprobs ? { logprobs: top ?? 0 } : {}),
    includeReasoning: fields.boolean('include_reasoning') ?? true,
  };
}

/** One message, its content flattened to text as vLLM does for templates that take strings (text parts joined by newlines). */
function readMessage(raw: unknown, index: number): TemplateMessage {
  const param = `messages[${index}]`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new FieldError(param, `\`${param}\` must be an object`);
  const { role, content, tool_calls: toolCalls, reasoning, ...rest } = raw as Record<string, unknown>;
  if (typeof role !== 'string') throw new FieldError(`${param}.role`, `\`${param}.role\` must be a string`);
  const message: Record<string, unknown> = { ...rest, role, content: flattenContent(content, `${param}.content`) };
  // vLLM renames an incoming `reasoning` to the `reasoning_content` Qwen's templates read.
  if (typeof reasoning === 'string' && message.reasoning_content === undefined) message.reasoning_content = reasoning;
  if (toolCalls !== undefined && toolCalls !== null) message.tool_calls = readToolCalls(toolCalls, `${param}.tool_calls`);
  return message as TemplateMessage;
}

function flattenContent(content: unknown, param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part, i) => {
        const { type, text } = (part ?? {}) as { type?: unknown; text?: unknown };
        if (type === 'text' && typeof text === 'string') return text;
        throw new FieldError(`${param}[${i}]`, `Only text content parts are supported by this model, got ${JSON.stringify(type)}`);
      })
      .join('\n');
  }
  throw new FieldError(param, `\`${param}\` must be a string or a list of content parts`);
}

/** An assistant turn's earlier calls: their JSON-string arguments parsed, as vLLM does, so templates can write them as objects. */
function readToolCalls(raw: unknown, param: string): unknown[] {
  if (!Array.isArray(raw)) throw new FieldError(param, `\`${param}\` must be a list`);
  return raw.map((call, i) => {
    const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
    if (typeof fn?.name !== 'string') throw new FieldError(`${param}[${i}].function.name`, `\`${param}[${i}].function.name\` must be a string`);
    let args = fn.arguments;
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        // A client's malformed arguments are written as the text they are.
      }
    }
    return { ...(call as object), function: { ...fn, arguments: args } };
  });
}

function readTools(fields: RequestFields): ToolSpec[] | undefined {
  const raw = fields.array('tools');
  if (raw === undefined) return undefined;
  if (raw.length === 0) throw new FieldError('tools', '`tools` must not be an empty array');
  return raw.map((tool, i) => {
    const fn = (tool as { type?: unknown; function?: { name?: unknown; parameters?: unknown } } | null)?.function;
    if ((tool as { type?: unknown })?.type !== 'function' || typeof fn?.name !== 'string') {
      throw new FieldError(`tools[${i}]`, `\`tools[${i}]\` must be {"type": "function", "function": {"name": ...}}`);
    }
    if (fn.parameters !== undefined && (typeof fn.parameters !== 'object' || fn.parameters === null)) throw new FieldError(`tools[${i}].function.parameters`, 'must be a JSON schema object');
    return tool as ToolSpec;
  });
}

/** vLLM's default: "none" without tools, "auto" with them. */
function readToolChoice(fields: RequestFields, tools: readonly ToolSpec[] | undefined): ToolChoice {
  const raw = fields.take('tool_choice');
  if (raw === undefined) return { kind: tools ? 'auto' : 'none' };
  if (!tools && raw !== 'none') throw new FieldError('tool_choice', 'When using `tool_choice`, `tools` must be set.');
  if (raw === 'none' || raw === 'auto' || raw === 'required') return { kind: raw };
  const name = (raw as { type?: unknown; function?: { name?: unknown } } | null)?.function?.name;
  if ((raw as { type?: unknown })?.type !== 'function' || typeof name !== 'string') {
    throw new FieldError('tool_choice', '`tool_choice` must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}');
  }
  if (!tools!.some((tool) => tool.function.name === name)) throw new FieldError('tool_choice', `Tool '${name}' has not been passed in \`tools\`.`);
  return { kind: 'named', name };
}

/**
 * The structured output a `required` or named tool choice implies, as vLLM builds it
 * (chat_completion/protocol.py `_get_json_schema_from_tool`): a named tool's arguments schema, or a
 * non-empty array of `{name, parameters}` over the offered tools.
 */
export function toolChoiceSchema(choice: ToolChoice, tools: readonly ToolSpec[] | undefined): object | undefined {
  if (!tools) return undefined;
  const parameters = (tool: ToolSpec): object => tool.function.parameters ?? { type: 'object', properties: {} };
  if (choice.kind === 'named') return parameters(tools.find((tool) => tool.function.name === choice.name)!);
  if (choice.kind !== 'required') return undefined;
  return {
    type: 'array',
    minItems: 1,
    items: {
      anyOf: tools.map((tool) => ({
        type: 'object',
        properties: { name: { type: 'string', enum: [tool.function.name] }, parameters: parameters(tool) },
        required: ['name', 'parameters'],
      })),
    },
  };
}
