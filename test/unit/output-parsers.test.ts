import { describe, expect, it } from 'vitest';
import { ReasoningParser, reasoningStart, type ReasoningSplit } from '../../src/generation/reasoning-parser.js';
import { accumulateToolCalls, ToolCallParser, type ToolCallDelta } from '../../src/generation/tool-call-parser.js';

/** Feeds the text one character at a time, the hardest split a stream can make. */
function byChar(parser: ReasoningParser, text: string): ReasoningSplit {
  let reasoning = '';
  let content = '';
  for (const ch of [...text, null]) {
    const part = ch === null ? parser.flush() : parser.push(ch);
    reasoning += part.reasoning;
    content += part.content;
  }
  return { reasoning, content };
}

describe('reasoningStart: the parser’s state from the rendered prompt’s tail', () => {
  it('thinking on (Qwen3 default), off, and an open block', () => {
    expect(reasoningStart('<|im_start|>assistant\n')).toBe('detect');
    expect(reasoningStart('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe('content');
    expect(reasoningStart('<|im_start|>assistant\n<think>\n')).toBe('reasoning');
    // An earlier turn's closed block does not count when the prompt goes on after it.
    expect(reasoningStart('<think>\nx\n</think>\n\nold answer<|im_end|>\n<|im_start|>assistant\n')).toBe('detect');
  });
});

describe('ReasoningParser', () => {
  it('thinking on: the model opens the block itself', () => {
    expect(byChar(new ReasoningParser('detect'), '<think>\nLet me see.\n</think>\n\nParis.')).toEqual({ reasoning: 'Let me see.\n', content: 'Paris.' });
  });

  it('thinking off: everything is content, even a later <think> the model writes', () => {
    expect(byChar(new ReasoningParser('content'), 'Paris. <think>no</think>')).toEqual({ reasoning: '', content: 'Paris. <think>no</think>' });
  });

  it('an open block in the prompt: output starts as reasoning', () => {
    expect(byChar(new ReasoningParser('reasoning'), 'hmm</think>\n\nyes')).toEqual({ reasoning: 'hmm', content: 'yes' });
  });

  it('detect with no block is content; a cut-off block stays reasoning', () => {
    expect(byChar(new ReasoningParser('detect'), 'Just <b>an answer</b>')).toEqual({ reasoning: '', content: 'Just <b>an answer</b>' });
    expect(byChar(new ReasoningParser('detect'), '<think>\nstill think')).toEqual({ reasoning: 'still think', content: '' });
  });
});

describe('ToolCallParser (Hermes / Qwen3 <tool_call>)', () => {
  const run = (text: string) => {
    const parser = new ToolCallParser();
    let content = '';
    const deltas: ToolCallDelta[] = [];
    for (const ch of [...text, null]) {
      const part = ch === null ? parser.flush() : parser.push(ch);
      content += part.content;
      deltas.push(...part.calls);
    }
    return { content, calls: accumulateToolCalls(deltas), deltas };
  };

  it('parses calls out of the content, arguments as a JSON string', () => {
    const out = run('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>');
    expect(out.content).toBe('Let me check.\n\n');
    expect(out.calls.map(({ name, arguments: args }) => ({ name, args }))).toEqual([
      { name: 'get_weather', args: '{"city":"Paris"}' },
      { name: 'now', args: '{}' },
    ]);
    expect(out.calls[0].id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
  });

  it('a block that is not a call, or never closes, stays content', () => {
    expect(run('<tool_call>not json</tool_call>')).toMatchObject({ content: '<tool_call>not json</tool_call>', calls: [] });
    expect(run('a <tool_call>{"name"')).toMatchObject({ content: 'a <tool_call>{"name"', calls: [] });
    expect(run('a <tool_ x')).toMatchObject({ content: 'a <tool_ x', calls: [] });
  });

  it("streams as vLLM's hermes parser: the name first, then the arguments piece by piece", () => {
    const { deltas, calls } = run('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par\\"is", "days": [1, 2]}}\n</tool_call>');
    expect(deltas[0]).toEqual({ index: 0, id: calls[0]!.id, name: 'get_weather' });
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.slice(1).every((d) => d.index === 0 && d.name === undefined && d.id === undefined && d.arguments !== undefined)).toBe(true);
    expect(calls).toEqual([{ id: calls[0]!.id, name: 'get_weather', arguments: '{"city":"Par\\"is","days":[1,2]}' }]);
    expect(JSON.parse(calls[0]!.arguments)).toEqual({ city: 'Par"is', days: [1, 2] });
  });

  it('a block whose name does not come first is sent whole when it closes', () => {
    const { deltas } = run('<tool_call>{"arguments": {"a": 1}, "name": "f"}</tool_call>');
    expect(deltas).toEqual([{ index: 0, id: expect.stringMatching(/^chatcmpl-tool-/), name: 'f', arguments: '{"a":1}' }]);
  });
});
