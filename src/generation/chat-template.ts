import { Template } from '@huggingface/jinja';
import { createError } from '../errors/index.js';
import type { ChatTemplateSource } from './text-generator.js';

/** A chat message as a template reads it: OpenAI's fields, with `content` already flattened to text. */
export interface TemplateMessage {
  readonly role: string;
  readonly content: string;
  readonly [field: string]: unknown;
}

export interface ChatRenderOptions {
  readonly messages: readonly TemplateMessage[];
  /** Function schemas, as OpenAI's `tools` (`{type: "function", function: {...}}`). */
  readonly tools?: readonly unknown[];
  /** RAG documents (vLLM's `documents`), for templates that read them. */
  readonly documents?: readonly unknown[];
  /** Open an assistant turn after the messages (default true). */
  readonly addGenerationPrompt: boolean;
  /** End the prompt inside the last message, so the model continues it (transformers' `continue_final_message`). */
  readonly continueFinalMessage: boolean;
  /** Extra template variables (`chat_template_kwargs`, e.g. `enable_thinking`). */
  readonly kwargs?: Readonly<Record<string, unknown>>;
}

/**
 * A model's chat template rendered as transformers' `apply_chat_template` renders it
 * (https://huggingface.co/docs/transformers/main/en/chat_templating), with @huggingface/jinja, the
 * Jinja implementation transformers.js uses for the same purpose. The template is parsed once.
 */
export class ChatTemplate {
  private readonly template: Template;

  constructor(private readonly source: ChatTemplateSource) {
    try {
      this.template = new Template(source.template);
    } catch (err) {
      throw createError('SF_ERR_CHAT_TEMPLATE_INVALID', (err as Error).message, { cause: err });
    }
  }

  /** Whether the template writes Qwen-style `<think>` blocks (the reasoning parser applies). */
  get writesThinking(): boolean {
    return this.source.template.includes('</think>');
  }

  /** Whether the template asks for Hermes/Qwen-style `<tool_call>` blocks (the tool-call parser applies). */
  get writesToolCalls(): boolean {
    return this.source.template.includes('<tool_call>');
  }

  render(options: ChatRenderOptions): string {
    if (options.addGenerationPrompt && options.continueFinalMessage) {
      throw createError('SF_ERR_BAD_REQUEST', 'Cannot set both `continue_final_message` and `add_generation_prompt` to True.');
    }
    // transformers passes the special tokens' strings and the kwargs as template variables; the
    // kwargs come first so that a request cannot replace `messages` through them.
    const variables: Record<string, unknown> = {
      ...options.kwargs,
      messages: options.messages,
      add_generation_prompt: options.addGenerationPrompt,
      bos_token: this.source.bosToken ?? '',
      eos_token: this.source.eosToken ?? '',
    };
    if (options.tools && options.tools.length > 0) variables.tools = options.tools;
    if (options.documents && options.documents.length > 0) variables.documents = options.documents;
    let rendered: string;
    try {
      rendered = this.template.render(variables);
    } catch (err) {
      // A template's raise_exception (a role it does not take, say) is the request's fault, as in vLLM.
      throw createError('SF_ERR_CHAT_TEMPLATE_FAILED', (err as Error).message, { cause: err });
    }
    return options.continueFinalMessage ? cutAfterFinalMessage(rendered, options.messages) : rendered;
  }
}

/** transformers' rule for `continue_final_message`: the prompt ends where the final message's (stripped) text last appears. */
function cutAfterFinalMessage(rendered: string, messages: readonly TemplateMessage[]): string {
  const final = messages.at(-1)?.content.trim() ?? '';
  const at = rendered.lastIndexOf(final);
  if (final === '' || at < 0) {
    throw createError('SF_ERR_CHAT_TEMPLATE_FAILED', 'continue_final_message is set but the final message does not appear in the chat after applying the chat template');
  }
  return rendered.slice(0, at + final.length);
}

/**
 * vLLM's `reasoning_effort` → `enable_thinking` rule (chat_completion/protocol.py): when an effort is
 * given and the client set no `enable_thinking`, thinking is on unless the effort is "none".
 */
export function templateKwargs(kwargs: Readonly<Record<string, unknown>> | undefined, reasoningEffort: string | undefined): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...kwargs };
  if (reasoningEffort !== undefined && !('enable_thinking' in merged)) merged.enable_thinking = reasoningEffort !== 'none';
  if (reasoningEffort !== undefined && !('reasoning_effort' in merged)) merged.reasoning_effort = reasoningEffort;
  return merged;
}
