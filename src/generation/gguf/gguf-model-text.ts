import type { LlamaModel, Token } from 'node-llama-cpp';
import type { ChatTemplateSource, PromptTokenizer } from '../text-generator.js';

/* The HTTP thread's view of a GGUF file, from a vocabulary-only load (llama.cpp's vocab_only): its tokenizer and chat template. */

/** The GGUF's own tokenizer (`tokenizer.ggml.*`), run by llama.cpp. */
export function ggufTokenizer(model: LlamaModel, vocabSize: number): PromptTokenizer {
  return {
    // specialTokens=true: special tokens written in the text are parsed (llama.cpp's parse_special, as HF tokenizers do);
    // add_special is the GGUF's `tokenizer.ggml.add_bos_token` (llama.cpp's llama_vocab_get_add_bos).
    encode: async (text, addSpecialTokens) => {
      const ids = model.tokenize(text, true) as number[];
      const bos = model.tokens.bos;
      return addSpecialTokens && model.tokens.shouldPrependBosToken && bos !== null ? [bos, ...ids] : ids;
    },
    decode: async (ids, skipSpecialTokens) => model.detokenize(ids as Token[], !skipSpecialTokens),
    tokenText: (id) => (Number.isInteger(id) && id >= 0 && id < vocabSize ? model.detokenize([id as Token], true) : undefined),
  };
}

/** `tokenizer.chat_template` and the special tokens it names (llama.cpp's `llama_model_chat_template`). */
export function ggufChatTemplate(model: LlamaModel): ChatTemplateSource | undefined {
  const template = (model.fileInfo.metadata as { tokenizer?: { chat_template?: unknown } }).tokenizer?.chat_template;
  if (typeof template !== 'string') return undefined;
  const bosToken = model.tokens.bosString ?? undefined;
  const eosToken = model.tokens.eosString ?? undefined;
  return { template, ...(bosToken !== undefined ? { bosToken } : {}), ...(eosToken !== undefined ? { eosToken } : {}) };
}
