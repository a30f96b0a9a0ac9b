import { recordTextModel } from '../metadata/reflection.js';
import type { TextModelDeclaration } from '../metadata/records.js';

/**
 * Makes a model class a text model: serve-fn tokenizes, batches by tokens, pads, pools or scores,
 * and serves the text protocols (TEI, OpenAI, Cohere/Jina/vLLM rerank, KServe v2 with texts),
 * while the class runs the forward pass in its instances. Its `execute(requests)` gets Triton-style
 * requests holding `input_ids` and `attention_mask` (and `token_type_ids`, `position_ids`), INT64
 * [rows, length], and answers `last_hidden_state` [rows, length, width] (or `sentence_embedding`
 * [rows, width] with pooledOutput) for embedders, `logits` [rows, labels] for classifiers and
 * rerankers, `logits` [rows, length, vocabulary] for SPLADE. Declaring @Tensors as well replaces
 * that implied interface.
 */
export function TextModel(options: TextModelDeclaration): ClassDecorator {
  return (target) => {
    recordTextModel(target as unknown as new () => unknown, { options: { ...options } });
  };
}
