/**
 * Structured outputs as both sides of the thread boundary read them (dependency-free): the HTTP
 * thread checks a request's spec and sends it with the sequence's first step; the instance compiles
 * it with the grammar engine over the model's vocabulary and masks each sampled token
 * (src/instance/grammar-matchers.ts). Re-exported by src/generation/text-generator.ts.
 */

/**
 * A structured output a request asks for (OpenAI's `response_format`, vLLM's `structured_outputs`
 * and its older `guided_*` fields): a JSON schema (`true` = any JSON object), a regular
 * expression, one of several strings, or an EBNF grammar.
 */
export type StructuredOutput =
  | { readonly kind: 'json'; readonly schema: object | true }
  | { readonly kind: 'regex'; readonly pattern: string }
  | { readonly kind: 'choice'; readonly choices: readonly string[] }
  | { readonly kind: 'grammar'; readonly ebnf: string };

/**
 * A model's vocabulary as xgrammar's TokenizerInfo reads it
 * (https://xgrammar.mlc.ai/docs/api/python/index.html#xgrammar.TokenizerInfo): each id's token
 * string as the tokenizer stores it, and how those strings encode bytes.
 */
export interface ConstraintVocabulary {
  /** Token strings by id ('' for ids the tokenizer does not use). */
  readonly encodedVocab: readonly string[];
  /** `byte_level`: GPT-2/Qwen byte-level BPE (`Ġ` for a space); `byte_fallback`: SentencePiece with `<0xNN>` tokens; `raw`: strings as they are. */
  readonly vocabType: 'raw' | 'byte_fallback' | 'byte_level';
  /** The logits' width, which may exceed the tokenizer's entries (Qwen3: 151,936 logits, 151,669 tokens). */
  readonly vocabSize: number;
  /** End-of-sequence ids: the grammar allows them once its output is complete. */
  readonly stopTokenIds: readonly number[];
}
