import { basename } from 'node:path';
import type { LlamaContext, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import { createError } from '../errors/index.js';
import type { DecoderRuntime, DecoderStepResult, DecoderStepRow } from '../spec/decoder-step.js';
import type { GgufGeneratorMetadata } from '../spec/gguf-generator-metadata.js';
import { vocabularyFromGguf, type ConstraintVocabulary } from './constraint-vocabulary.js';
import { importNodeLlamaCpp, sharedLlama } from './node-llama-cpp-loader.js';

export type { GgufGeneratorMetadata };

export interface GgufRuntimeOptions {
  /** Context sequences (vLLM's `--max-num-seqs`): one per running scheduler sequence. */
  readonly maxNumSeqs: number;
  /** Tokens per sequence (vLLM's `--max-model-len`); the GGUF's `<arch>.context_length` when unset. */
  readonly maxModelLen?: number;
  /** llama.cpp's logical batch (`-b`): the most tokens one llama_decode takes; a step's rows are split over several decodes past it. */
  readonly maxNumBatchedTokens?: number;
  /** CPU threads for llama.cpp (node-llama-cpp's default: every core). */
  readonly threads?: number;
  /** node-llama-cpp's `gpu` option: `'auto'` uses CUDA, Vulkan or Metal where its prebuilt binary for them loads. */
  readonly gpu?: 'auto' | false;
}

/**
 * A DecoderRuntime over llama.cpp through node-llama-cpp's low-level API: one LlamaContext with a
 * context sequence per scheduler sequence (llama-server's slots). All rows of a step are queued
 * together, and node-llama-cpp batches the queued tokens of every sequence into one llama_decode
 * (docs/guide/batching.md), which is llama.cpp's continuous batching.
 *
 * Logits: node-llama-cpp returns no raw logits; `controlledEvaluate` returns the full next-token
 * distribution, so each row's vector is log softmax(logits) computed by llama.cpp at temperature 1
 * with every sampler off — a valid logit vector (softmax of it gives the same distribution; greedy,
 * top-k/p, min-p and penalties act the same), offset by a per-row constant. Tokens whose
 * probability underflows float32 come back as -Infinity.
 */
export class GgufRuntime implements DecoderRuntime {
  private readonly sequences = new Map<number, LlamaContextSequence>();

  constructor(
    private readonly model: LlamaModel,
    private readonly context: LlamaContext,
    readonly metadata: GgufGeneratorMetadata,
  ) {}

  get vocabSize(): number {
    return this.metadata.vocabSize;
  }

  async step(rows: readonly DecoderStepRow[]): Promise<DecoderStepResult> {
    const sequences = rows.map((row) => this.sequence(row));
    // Truncate first, then queue every evaluation in the same tick, so they share one decode.
    await Promise.all(rows.map((row, i) => this.truncate(sequences[i]!, row)));
    const outputs = await Promise.all(rows.map((row, i) => this.evaluate(sequences[i]!, row)));
    return { rows: outputs };
  }

  /** The GGUF's token list for the structured-output grammar engine (the instance's GrammarMatchers). */
  constraintVocabulary(): ConstraintVocabulary {
    const ggml = (this.model.fileInfo.metadata as { tokenizer?: { ggml?: { tokens?: readonly string[]; model?: string } } }).tokenizer?.ggml;
    return vocabularyFromGguf(ggml?.tokens ?? [], ggml?.model ?? '', this.vocabSize, this.metadata.eosTokenIds);
  }

  release(sequenceIds: readonly number[]): void {
    for (const id of sequenceIds) {
      const sequence = this.sequences.get(id);
      if (!sequence) continue;
      this.sequences.delete(id);
      sequence.dispose();
    }
  }

  async dispose(): Promise<void> {
    this.sequences.clear();
    await this.context.dispose();
    await this.model.dispose();
  }

  private sequence(row: DecoderStepRow): LlamaContextSequence {
    const held = this.sequences.get(row.sequenceId);
    if (row.cachedLength + row.tokenIds.length > this.metadata.maxModelLen) {
      throw new RangeError(`sequence ${row.sequenceId} would hold ${row.cachedLength + row.tokenIds.length} tokens, past max_model_len ${this.metadata.maxModelLen}`);
    }
    if (held) return held;
    if (this.context.sequencesLeft === 0) throw new RangeError(`sequence ${row.sequenceId}: all ${this.context.totalSequences} context sequences (max_num_seqs) are in use`);
    // No context shift: the scheduler keeps every sequence within max_model_len, and a shift would silently drop tokens.
    const sequence = this.context.getSequence({ contextShift: { strategy: () => { throw new RangeError('context shift is disabled'); } } });
    this.sequences.set(row.sequenceId, sequence);
    return sequence;
  }

  private async truncate(sequence: LlamaContextSequence, row: DecoderStepRow): Promise<void> {
    const held = sequence.nextTokenIndex;
    if (row.cachedLength > held) throw new RangeError(`sequence ${row.sequenceId}: cachedLength ${row.cachedLength} but the cache holds ${held} tokens`);
    if (row.cachedLength < held) await sequence.eraseContextTokenRanges([{ start: row.cachedLength, end: held }]);
  }

  private async evaluate(sequence: LlamaContextSequence, row: DecoderStepRow): Promise<Float32Array | undefined> {
    const last = row.tokenIds.length - 1;
    const wants = (i: number) => row.logits === 'all' || (row.logits === 'last' && i === last);
    const input = row.tokenIds.map((token, i) =>
      wants(i) ? ([token as Token, { generateNext: { probabilities: true, options: FULL_DISTRIBUTION } }] as const) : (token as Token),
    );
    const results = await sequence.controlledEvaluate(input as Parameters<LlamaContextSequence['controlledEvaluate']>[0]);
    if (row.logits === 'none') return undefined;
    const positions = row.logits === 'all' ? row.tokenIds.map((_, i) => i) : [last];
    const V = this.metadata.vocabSize;
    const out = new Float32Array(positions.length * V).fill(-Infinity);
    positions.forEach((position, k) => {
      const probabilities = results[position]?.next.probabilities;
      if (!probabilities) throw new Error(`node-llama-cpp returned no distribution for position ${position} of sequence ${row.sequenceId}`);
      for (const [token, p] of probabilities) out[k * V + token] = Math.log(p);
    });
    return out;
  }
}

/** Temperature 1 and every truncating sampler off: the model's own distribution. */
const FULL_DISTRIBUTION = { temperature: 1, topK: 0, topP: 1, minP: 0 } as const;

/**
 * Loads a `.gguf` file as a DecoderRuntime, in the generator's worker instance (decoder-host.ts).
 * node-llama-cpp is imported here, on the first GGUF served (an optional peer).
 */
export async function createGgufRuntime(file: string, options: GgufRuntimeOptions): Promise<GgufRuntime> {
  const lib = await importNodeLlamaCpp(file);
  let model: LlamaModel;
  try {
    const llama = await sharedLlama(lib, options.gpu ?? false);
    model = await llama.loadModel({ modelPath: file });
  } catch (err) {
    throw createError('SF_ERR_GGUF_INVALID', file, (err as Error).message, { cause: err });
  }
  const metadata = ggufGeneratorMetadata(file, model, options.maxModelLen);
  const context = await model.createContext({
    sequences: options.maxNumSeqs,
    contextSize: metadata.maxModelLen,
    batchSize: options.maxNumBatchedTokens ?? 512,
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
  });
  return new GgufRuntime(model, context, metadata);
}

/** The generator's metadata from a loaded GGUF (the worker's model, or the HTTP thread's vocabulary-only one): name from the file, context from `<arch>.context_length` unless `--max-model-len` says less. */
export function ggufGeneratorMetadata(file: string, model: LlamaModel, maxModelLen?: number): GgufGeneratorMetadata {
  // A model loaded with vocabOnly (the HTTP thread's) has no hyperparameters: its context_length is read from the metadata.
  const trained = model.trainContextSize || Number((model.fileInfo.architectureMetadata as { context_length?: number }).context_length ?? 0);
  if (maxModelLen !== undefined && maxModelLen > trained) {
    // vLLM refuses a --max-model-len past the model's max_position_embeddings the same way.
    throw createError('SF_ERR_GGUF_INVALID', file, `--max-model-len ${maxModelLen} is larger than the model's context_length ${trained}`);
  }
  const eosTokenIds: number[] = [];
  let vocabSize = 0;
  for (const token of model.iterateAllTokens()) {
    vocabSize++;
    if (model.isEogToken(token)) eosTokenIds.push(token);
  }
  return { name: basename(file).replace(/\.gguf$/i, ''), maxModelLen: maxModelLen ?? trained, vocabSize, eosTokenIds };
}
