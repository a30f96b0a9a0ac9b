import { readFile } from 'node:fs/promises';
import type { ConstraintVocabulary } from '../spec/structured-output.js';
import type { TokenizerFileVocabulary } from '../wire/decoder-step-call.js';

export type { ConstraintVocabulary };

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

/** A decoder folder's tokenizer.json as a vocabulary, read when the instance first needs it. */
export async function vocabularyFromTokenizerFile(file: string, vocabSize: number, stopTokenIds: readonly number[]): Promise<ConstraintVocabulary> {
  return vocabularyFromTokenizerJson(JSON.parse(await readFile(file, 'utf8')) as TokenizerJson, vocabSize, stopTokenIds);
}

/**
 * What an instance's grammar engine reads on its first structured output, from the tokenizer.json
 * its plan names: a decoder folder's and a @GenerativeModel class's alike. Undefined without one.
 */
export function tokenizerFileVocabulary(plan: TokenizerFileVocabulary | undefined): (() => Promise<ConstraintVocabulary>) | undefined {
  return plan && (() => vocabularyFromTokenizerFile(plan.tokenizerFile, plan.vocabSize, plan.stopTokenIds));
}
