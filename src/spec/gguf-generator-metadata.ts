/**
 * What a `.gguf` file served as a generator reports, read the same way on both sides of the thread
 * boundary (src/instance/gguf-runtime.ts's `ggufGeneratorMetadata`): the HTTP thread from a
 * vocabulary-only load, the worker from the model it runs.
 */
export interface GgufGeneratorMetadata {
  /** The file's name without `.gguf`, as llama-server's `/v1/models` names a model by its file. */
  readonly name: string;
  readonly maxModelLen: number;
  readonly vocabSize: number;
  /** Every end-of-generation id llama.cpp stops on (eos, eot, and tokens such as `<|im_end|>`: llama-vocab.cpp's special_eog_ids). */
  readonly eosTokenIds: readonly number[];
}
