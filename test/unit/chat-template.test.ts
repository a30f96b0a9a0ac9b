import { describe, expect, it } from 'vitest';
import { ChatTemplate, templateKwargs } from '../../src/generation/chat-template.js';
import { qwen3ChatTemplate } from '../helpers/fake-generator.js';

const USER = [{ role: 'user', content: 'Hi' }];

describe('ChatTemplate with Qwen3-0.6B’s real template', async () => {
  const template = new ChatTemplate(await qwen3ChatTemplate());
  const render = (kwargs?: Record<string, unknown>, extra: object = {}) =>
    template.render({ messages: USER, addGenerationPrompt: true, continueFinalMessage: false, kwargs, ...extra });

  // transformers' apply_chat_template(..., add_generation_prompt=True[, enable_thinking=False]) on Qwen/Qwen3-0.6B.
  it('thinking on (the default) opens the assistant turn and leaves the think block to the model', () => {
    expect(render()).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    expect(render({ enable_thinking: true })).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
  });

  it('thinking off writes an empty, closed think block', () => {
    expect(render({ enable_thinking: false })).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
  });

  it('reasoning_effort "none" turns thinking off as vLLM does, unless enable_thinking was given', () => {
    expect(templateKwargs(undefined, 'none')).toMatchObject({ enable_thinking: false });
    expect(templateKwargs(undefined, 'high')).toMatchObject({ enable_thinking: true });
    expect(templateKwargs({ enable_thinking: true }, 'none')).toMatchObject({ enable_thinking: true });
    expect(render(templateKwargs(undefined, 'none'))).toContain('<think>\n\n</think>');
  });

  it('renders tools in the system block, with Python-style tojson spacing', () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    const prompt = render(undefined, { tools });
    expect(prompt.startsWith('<|im_start|>system\n# Tools\n')).toBe(true);
    expect(prompt).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}\n</tools>');
  });

  it('continue_final_message ends the prompt inside the last message', () => {
    const prompt = template.render({ messages: [...USER, { role: 'assistant', content: 'The answer is' }], addGenerationPrompt: false, continueFinalMessage: true });
    expect(prompt.endsWith('The answer is')).toBe(true);
    expect(prompt).not.toContain('The answer is<|im_end|>');
  });

  it('refuses add_generation_prompt with continue_final_message, as vLLM does', () => {
    expect(() => template.render({ messages: USER, addGenerationPrompt: true, continueFinalMessage: true })).toThrow(/Cannot set both/);
  });

  it('a template that raises answers SF_ERR_CHAT_TEMPLATE_FAILED (a 400)', () => {
    const raising = new ChatTemplate({ template: "{{ raise_exception('only user turns') }}" });
    expect(() => raising.render({ messages: USER, addGenerationPrompt: true, continueFinalMessage: false })).toThrow(expect.objectContaining({ code: 'SF_ERR_CHAT_TEMPLATE_FAILED', statusCode: 400 }));
  });

  it('documents reach the template', () => {
    const docs = new ChatTemplate({ template: '{% for d in documents %}[{{ d.title }}]{% endfor %}' });
    expect(docs.render({ messages: USER, documents: [{ title: 'a' }, { title: 'b' }], addGenerationPrompt: true, continueFinalMessage: false })).toBe('[a][b]');
  });
});
