import { describe, expect, it } from 'vitest';
import { RequestFields } from '../../src/protocol/openai/request-fields.js';
import { readSamplingFields, resolveMaxTokens } from '../../src/protocol/openai/sampling-fields.js';
import { readStructuredOutput } from '../../src/protocol/openai/structured-output-fields.js';
import { FakeGenerator } from '../helpers/fake-generator.js';

const generator = new FakeGenerator(() => [], 'g', 100, { temperature: 0.7, maxTokens: 40 });
const read = (body: object) => readSamplingFields(new RequestFields(body), generator, {});

describe('readSamplingFields', () => {
  it('request over generation_config over vLLM’s built-ins', () => {
    expect(read({}).sampling).toMatchObject({ temperature: 0.7, topP: 1, topK: 0, minP: 0, repetitionPenalty: 1, presencePenalty: 0 });
    expect(read({ temperature: 0 }).sampling.temperature).toBe(0);
  });

  it('max_completion_tokens wins over max_tokens; the route default is capped by generation_config', () => {
    expect(read({ max_tokens: 5, max_completion_tokens: 7 }).maxTokens).toBe(7);
    expect(resolveMaxTokens(undefined, 90, generator)).toBe(40);
    expect(resolveMaxTokens(undefined, 16, generator)).toBe(16);
    expect(resolveMaxTokens(3, 16, generator)).toBe(3);
  });

  it.each([
    [{ temperature: -0.1 }, 'temperature'],
    [{ top_p: 0 }, 'top_p'],
    [{ top_k: -2 }, 'top_k'],
    [{ min_p: 1.5 }, 'min_p'],
    [{ presence_penalty: 3 }, 'presence_penalty'],
    [{ repetition_penalty: 0 }, 'repetition_penalty'],
    [{ n: 0 }, 'n'],
    [{ n: 1.5 }, 'n'],
    [{ stop: [1] }, 'stop'],
    [{ stop_token_ids: [-1] }, 'stop_token_ids'],
    [{ temperature: '1' }, 'temperature'],
  ])('%o is a 400 naming %s', (body, param) => {
    expect(() => read(body)).toThrow(expect.objectContaining({ statusCode: 400, param }));
  });

  it('null counts as absent; unread fields are reported', () => {
    const fields = new RequestFields({ temperature: null, user: 'x', top_p: 0.5 });
    expect(readSamplingFields(fields, generator, {}).sampling).toMatchObject({ temperature: 0.7, topP: 0.5 });
    expect(fields.unread()).toEqual(['user']);
  });
});

describe('readStructuredOutput', () => {
  const structured = (body: object, completions = false) => readStructuredOutput(new RequestFields(body), completions);

  it('maps every spelling onto one StructuredOutput', () => {
    expect(structured({ response_format: { type: 'text' } })).toBeUndefined();
    expect(structured({ response_format: { type: 'json_object' } })?.output).toEqual({ kind: 'json', schema: true });
    expect(structured({ structured_outputs: { json_object: true } })?.output).toEqual({ kind: 'json', schema: true });
    expect(structured({ structured_outputs: { choice: ['a', 'b'] } })?.output).toEqual({ kind: 'choice', choices: ['a', 'b'] });
    expect(structured({ guided_regex: '\\d+' })).toEqual({ output: { kind: 'regex', pattern: '\\d+' }, field: 'guided_regex' });
    expect(structured({ guided_grammar: 'root ::= "x"' })?.output).toEqual({ kind: 'grammar', ebnf: 'root ::= "x"' });
    expect(structured({ guided_json: { type: 'object' } })?.output).toEqual({ kind: 'json', schema: { type: 'object' } });
  });

  it('refuses two at once, a bad schema text, an unknown type', () => {
    expect(() => structured({ response_format: { type: 'json_object' }, guided_regex: 'a' })).toThrow(/Only one structured output/);
    expect(() => structured({ guided_json: '{nope' })).toThrow(expect.objectContaining({ param: 'guided_json' }));
    expect(() => structured({ response_format: { type: 'xml' } })).toThrow(expect.objectContaining({ param: 'response_format' }));
    expect(() => structured({ guided_choice: [] })).toThrow(/non-empty list/);
  });
});
