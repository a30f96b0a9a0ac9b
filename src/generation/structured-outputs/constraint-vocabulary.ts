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

interface TokenizerJson {
  model?: { type?: string; vocab?: Record<string, number> | [string, number][]; byte_fallback?: boolean };
  added_tokens?: { id: number; content: string }[];
  decoder?: { type?: string; decoders?: { type?: string }[] } | null;
  pre_tokenizer?: { type?: string; pretokenizers?: { type?: string }[] } | null;
}

/** The vocabulary of a Hugging Face tokenizer.json, detected as xgrammar's `from_huggingface` does (a ByteLevel decoder → byte_level; byte_fallback → byte_fallback). */
export function vocabularyFromTokenizerJson(json: TokenizerJson, vocabSize: number, stopTokenIds: readonly number[]): ConstraintVocabulary {
  const entries: [string, number][] = Array.isArray(json.model?.vocab)
    ? json.model.vocab.map(([token], id) => [token, id])
    : Object.entries(json.model?.vocab ?? {});
  for (const added of json.added_tokens ?? []) entries.push([added.content, added.id]);
  let size = vocabSize;
  for (const [, id] of entries) size = Math.max(size, id + 1);
  const encodedVocab = new Array<string>(size).fill('');
  for (const [token, id] of entries) encodedVocab[id] = token;
  const types = (node: { type?: string; decoders?: { type?: string }[]; pretokenizers?: { type?: string }[] } | null | undefined) =>
    [node?.type, ...(node?.decoders ?? []).map((d) => d.type), ...(node?.pretokenizers ?? []).map((p) => p.type)];
  const vocabType = [...types(json.decoder), ...types(json.pre_tokenizer)].includes('ByteLevel')
    ? 'byte_level'
    : json.model?.byte_fallback
      ? 'byte_fallback'
      : 'raw';
  return { encodedVocab, vocabType, vocabSize: size, stopTokenIds };
}

/** The vocabulary a GGUF embeds (`tokenizer.ggml.tokens`): `gpt2` is byte-level BPE, `llama` is SentencePiece with byte fallback. */
export function vocabularyFromGguf(tokens: readonly string[], tokenizerModel: string, vocabSize: number, stopTokenIds: readonly number[]): ConstraintVocabulary {
  const vocabType = tokenizerModel === 'gpt2' ? 'byte_level' : tokenizerModel === 'llama' ? 'byte_fallback' : 'raw';
  const encodedVocab = [...tokens];
  while (encodedVocab.length < vocabSize) encodedVocab.push('');
  return { encodedVocab, vocabType, vocabSize: Math.max(vocabSize, tokens.length), stopTokenIds };
}
