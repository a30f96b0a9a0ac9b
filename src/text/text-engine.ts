import { createError, ServeFnError } from '../errors/index.js';
import type { ForwardRow, ForwardSequence, ForwardWant, SparseValue } from '../wire/wire-format.js';
import { ForwardScheduler, type TextForward } from './forward-scheduler.js';
import type { TextTask } from './model-folder.js';
import { l2Normalize, sigmoid, softmax } from './pooling.js';
import { admittedPair, admittedText, codePoints } from './text-characters.js';
import { answerPermits, inputPermits, TextPermits } from './text-permits.js';
import type { TextInput } from './text-inputs.js';
import type { TextFailure, TextMetricFamily } from './text-metrics.js';
import type { TextEncoding, TextTokenization } from '../tokenizer/tokenizer.js';
import { now } from '../wire/epoch-time.js';

import type { EmbedOptions, PromptOptions, ScoredLabel, TextAnswer, TokenInfo, TruncateOptions } from './text-answers.js';
import type { TextModelInfo, TextModelOptions, TextModelSpec } from './text-model-spec.js';

export type { TextInput } from './text-inputs.js';
export type { EmbedOptions, PromptOptions, ScoredLabel, TextAnswer, TextTimings, TokenInfo, TruncateOptions } from './text-answers.js';
export { DEFAULT_TEXT_LIMITS, type TextLimits, type TextModelInfo, type TextModelOptions, type TextModelSpec } from './text-model-spec.js';
export type { SparseValue } from '../wire/wire-format.js';

/** The operations, with the tasks each runs on (TEI's: /predict serves classifiers and rerankers alike). */
const TASKS: Readonly<Record<string, readonly TextTask[]>> = {
  embed: ['embed'], embed_all: ['embed'], similarity: ['embed'], embed_sparse: ['sparse'], predict: ['classify', 'rerank'], rerank: ['rerank'],
};
const TASK_NOUN: Readonly<Record<string, string>> = { embed: 'embedding', embed_all: 'embedding', similarity: 'embedding', embed_sparse: 'sparse embedding (SPLADE)', predict: 'classifier', rerank: 're-ranker' };

/**
 * A text model served the way TEI serves one: texts are tokenized here, each input queued on its
 * own, forward batches formed by the dynamic batcher under a padded token budget, padded to their
 * longest row, run on the forward model's instances (an ONNX or OM file, or a @TextModel class),
 * and pooled, normalised or scored here. A client batch is split across forward batches and
 * answered in its order. The protocols (TEI, OpenAI, Cohere/Jina/vLLM, KServe v2) call this.
 */
export class TextEngine {
  readonly spec: TextModelSpec;
  private readonly batches: ForwardScheduler;
  private readonly permits: TextPermits;

  constructor(
    spec: TextModelSpec,
    readonly tokenizer: TextTokenization,
    private readonly forward: TextForward,
    private readonly options: TextModelOptions,
  ) {
    const { limits } = options;
    this.permits = new TextPermits(limits.maxConcurrentRequests);
    this.batches = new ForwardScheduler(spec.name, forward, {
      pooling: spec.pooling, padId: tokenizer.padId, maxBatchTokens: limits.maxBatchTokens, maxBatchRequests: limits.maxBatchRequests, batchByLength: limits.batchByLength,
      metrics: options.metrics, log: options.log,
    });
    if (spec.task === 'embed') this.batches.width = spec.dimensions;
    const fixed = this.batches.fixedLength;
    // A model compiled for one sequence length takes nothing longer.
    this.spec = fixed !== undefined && fixed < spec.maxInputLength ? { ...spec, maxInputLength: fixed } : spec;
    if (spec.defaultPromptName !== undefined) this.promptFor(spec.defaultPromptName);
  }

  get info(): TextModelInfo {
    const { spec, options } = this;
    return {
      name: spec.name, modelId: spec.modelId, task: spec.task, pooling: spec.pooling, dimensions: this.batches.width, labels: spec.labels,
      maxInputLength: spec.maxInputLength, prompts: spec.prompts, limits: options.limits, computeType: options.computeType, dtype: options.dtype ?? 'float32',
    };
  }

  ready(): boolean {
    return this.batches.ready() && (this.tokenizer.ready?.() ?? true);
  }

  async embed(inputs: readonly TextInput[], options: EmbedOptions = {}): Promise<TextAnswer<Float32Array>> {
    const { dimensions } = options;
    if (dimensions !== undefined && (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > (this.batches.width ?? Infinity))) throw this.badDimensions(dimensions);
    const answer = await this.run('embed', 'embed', inputs, (input) => this.encodeInput(input, options), 'pooled', inputs.map(characters), options);
    const values = (answer.values as Float32Array[]).map((vector) => {
      if (dimensions !== undefined && dimensions > vector.length) throw this.badDimensions(dimensions);
      const kept = dimensions === undefined ? vector : vector.slice(0, dimensions);
      return options.normalize ?? true ? l2Normalize(kept) : kept;
    });
    return { ...answer, values };
  }

  /** TEI's rule: `dimensions` keeps a prefix of the embedding, so it is 1 to the model's width. */
  private badDimensions(dimensions: number): ServeFnError {
    const known = this.batches.width;
    const width = known === undefined ? '' : ` (the model's embeddings have ${known})`;
    return createError('SF_ERR_TEXT_VALIDATION', `\`dimensions\` must be a whole number from 1 to the embedding size${width}, got ${dimensions}`);
  }

  async embedAll(inputs: readonly TextInput[], options: TruncateOptions & PromptOptions = {}): Promise<TextAnswer<Float32Array[]>> {
    return this.run('embed_all', 'embed', inputs, (input) => this.encodeInput(input, options), 'tokens', inputs.map(characters), options) as Promise<TextAnswer<Float32Array[]>>;
  }

  async embedSparse(inputs: readonly TextInput[], options: TruncateOptions & PromptOptions = {}): Promise<TextAnswer<SparseValue[]>> {
    return this.run('embed_sparse', 'embed', inputs, (input) => this.encodeInput(input, options), 'sparse', inputs.map(characters), options) as Promise<TextAnswer<SparseValue[]>>;
  }

  /** One text or a pair per input; each input's labels sorted by score, highest first. */
  async predict(inputs: readonly (string | readonly [string, string])[], options: TruncateOptions & { readonly rawScores?: boolean } = {}): Promise<TextAnswer<ScoredLabel[]>> {
    const encode = (input: string | readonly [string, string]) => (typeof input === 'string' ? this.encodeInput(input, options) : this.encodePair(input[0], input[1], options));
    const answer = await this.run('predict', 'predict', inputs, encode, 'logits', inputs.map((input) => (typeof input === 'string' ? codePoints(input) : codePoints(input[0]) + codePoints(input[1]))), options);
    const values = (answer.values as Float32Array[]).map((logits) => {
      const scores = options.rawScores ? logits : logits.length === 1 ? logits.map(sigmoid) : softmax(logits);
      return Array.from(scores, (score, i) => ({ score, label: this.spec.labels[i] ?? `LABEL_${i}` })).sort((a, b) => b.score - a.score);
    });
    return { ...answer, values };
  }

  /** One score per text, in the texts' order: the (query, text) pair's logit, through a sigmoid unless rawScores. */
  async rerank(query: string, texts: readonly string[], options: TruncateOptions & { readonly rawScores?: boolean } = {}): Promise<TextAnswer<number>> {
    if (texts.length === 0) throw createError('SF_ERR_TEXT_EMPTY', '`texts`');
    // Every pair tokenizes the query again, so each costs the query's characters too.
    const queryCharacters = codePoints(query);
    const answer = await this.run('rerank', 'predict', texts, (text) => this.encodePair(query, text, options), 'logits', texts.map((text) => queryCharacters + codePoints(text)), options);
    return { ...answer, values: (answer.values as Float32Array[]).map((logits) => (options.rawScores ? logits[0] : sigmoid(logits[0]))) };
  }

  /** Cosine similarity of `source` with each sentence (TEI's /similarity). */
  async similarity(source: string, sentences: readonly string[], options: TruncateOptions & PromptOptions = {}): Promise<TextAnswer<number>> {
    if (sentences.length === 0) throw createError('SF_ERR_TEXT_EMPTY', '`sentences`');
    const answer = await this.embed([source, ...sentences], { ...options, normalize: true });
    const [first, ...rest] = answer.values;
    return { ...answer, values: rest.map((v) => v.reduce((sum, x, i) => sum + x * first[i], 0)) };
  }

  /** Tokens with the original substring and UTF-8 byte offsets (null for special tokens), as TEI's /tokenize. */
  async tokenize(inputs: readonly string[], options: PromptOptions & { readonly addSpecialTokens?: boolean } = {}): Promise<TokenInfo[][]> {
    this.checkClientBatch(inputs.length);
    // Its answer is some 60 bytes a token: it takes permits by its texts' length, as a forward pass would.
    const release = this.admit(inputPermits(inputs.map(codePoints), this.spec.maxInputLength, this.permits.capacity));
    try {
      return await this.tokenInfos(inputs, options);
    } finally {
      release();
    }
  }

  private tokenInfos(inputs: readonly string[], options: PromptOptions & { readonly addSpecialTokens?: boolean }): Promise<TokenInfo[][]> {
    return Promise.all(inputs.map(async (input) => {
      // The prompt /embed would add, so the tokens shown are the tokens embedded. Nothing is cut
      // here: TEI's /tokenize refuses a text over its character bound.
      const admitted = admittedText(input, { maxInputLength: this.spec.maxInputLength, cut: false, direction: 'right' });
      const text = this.withPrompt(admitted, options.promptName ?? this.spec.defaultPromptName);
      const encoding = await this.tokenizer.encode(text, { addSpecialTokens: options.addSpecialTokens ?? true, offsets: true });
      const bytes = Buffer.from(text, 'utf8');
      return Array.from(encoding.ids, (id, i) => {
        const offsets = encoding.offsets![i];
        const special = encoding.special[i] === 1;
        return offsets === null
          ? { id, text: this.tokenizer.idToToken(id) ?? '', special, start: null, stop: null }
          : { id, text: bytes.subarray(offsets[0], offsets[1]).toString('utf8'), special, start: offsets[0], stop: offsets[1] };
      });
    }));
  }

  async decode(ids: readonly (readonly number[])[], skipSpecialTokens: boolean): Promise<string[]> {
    this.checkClientBatch(ids.length);
    for (const sequence of ids) this.checkIds(sequence);
    return Promise.all(ids.map((sequence) => this.tokenizer.decode(sequence, skipSpecialTokens)));
  }

  /** Takes permits without waiting; 429 when too few are free. */
  private admit(count: number): () => void {
    const release = this.permits.tryTake(count);
    if (release) return release;
    this.options.metrics?.failed(this.spec.name, 'overloaded');
    throw createError('SF_ERR_TEXT_OVERLOADED');
  }

  /**
   * Admits, tokenizes, queues and gathers one request. Admission is TEI's, and comes before any
   * tokenizing: too many inputs for one request is 413, and the request takes its permits
   * (text-permits.ts: by its inputs and their `characters`, what each hands the tokenizer) without
   * waiting. Token embeddings are sized once tokenized, before the forward pass: over
   * --max-answer-bytes is refused, and a request whose answer costs more permits than its inputs
   * takes the difference.
   */
  private async run<I>(operation: string, family: TextMetricFamily, inputs: readonly I[], encode: (input: I) => Promise<TextEncoding>, want: ForwardWant, characters: readonly number[], request: TruncateOptions): Promise<TextAnswer<ForwardRow>> {
    const started = performance.now();
    const { metrics } = this.options;
    const name = this.spec.name;
    const failed = (err: TextFailure) => metrics?.failed(name, err);
    if (!TASKS[operation].includes(this.spec.task)) {
      failed('model_type');
      throw createError('SF_ERR_TEXT_WRONG_TASK', name, TASK_NOUN[operation]);
    }
    if (inputs.length === 0) throw createError('SF_ERR_TEXT_EMPTY', '`inputs`');
    try {
      this.checkClientBatch(inputs.length);
    } catch (err) {
      failed('batch_size');
      throw err;
    }
    const held = inputPermits(characters, this.spec.maxInputLength, this.permits.capacity);
    const releases = [this.admit(held)];
    metrics?.received(name, family, inputs.length);
    const { trace } = request;
    // Epoch time, as the engine's spans: only read when the request is traced.
    const tokenizeStartMs = trace ? now() : 0;
    try {
      let sequences: ForwardSequence[];
      try {
        // Promise.all handles every rejection, so a second bad input is not an unhandled one.
        sequences = (await Promise.all(inputs.map(encode))).map((encoding) => ({ ids: encoding.ids, typeIds: encoding.typeIds, want }));
      } catch (err) {
        const code = (err as ServeFnError).code;
        // A client gone while its texts waited for the tokenizer is counted below, as dropped.
        if (code !== 'SF_ERR_CANCELLED') failed(code === 'SF_ERR_TOKENIZATION_FAILED' ? 'tokenization' : 'validation');
        throw err;
      }
      const tokenizationMs = performance.now() - started;
      for (const s of sequences) metrics?.tokenized(name, s.ids.length);
      const tokens = sequences.reduce((sum, s) => sum + s.ids.length, 0);
      trace?.child('tokenize', tokenizeStartMs, now(), { ...this.forward.engine.spanAttributes(), 'serve_fn.inputs': inputs.length, 'serve_fn.tokens': tokens });
      // An embedder of unknown width (no hidden_size in its config, no forward pass yet) is sized once its rows are back.
      const width = this.batches.width;
      if (want === 'tokens' && width !== undefined) releases.push(this.admitAnswer(tokenEmbeddingsBytes(tokens, inputs.length, width), held));
      const results = await Promise.all(this.batches.submitAll(sequences, request.signal, trace));
      if (want === 'tokens' && width === undefined) this.checkAnswer(tokenEmbeddingsBytes(tokens, inputs.length, (results[0].row as Float32Array[])[0]?.length ?? 0));
      const timings = {
        tokenizationMs,
        queueMs: Math.max(...results.map((r) => r.queueMs)),
        inferenceMs: Math.max(...results.map((r) => r.inferenceMs)),
        totalMs: performance.now() - started,
      };
      metrics?.answered(name, family, inputs.length, timings);
      return { values: results.map((r) => r.row), promptTokens: tokens, characters: characters.reduce((sum, count) => sum + count, 0), timings };
    } catch (err) {
      const code = (err as ServeFnError).code;
      if (code === 'SF_ERR_TEXT_BACKEND') failed('inference');
      // TEI's name for a request whose client went away before its batch was formed.
      else if (code === 'SF_ERR_CANCELLED') failed('dropped');
      throw err;
    } finally {
      for (const release of releases) release();
    }
  }

  /** A request costs its answer's share of the permits when that is more than its inputs' (`held`). */
  private admitAnswer(bytes: number, held: number): () => void {
    this.checkAnswer(bytes);
    return this.admit(Math.max(0, answerPermits(bytes, this.options.limits.maxAnswerBytes, this.permits.capacity) - held));
  }

  private checkAnswer(bytes: number): void {
    const limit = this.options.limits.maxAnswerBytes;
    if (bytes > limit) {
      this.options.metrics?.failed(this.spec.name, 'validation');
      throw createError('SF_ERR_TEXT_ANSWER_TOO_LARGE', bytes, limit);
    }
  }

  /**
   * Texts are tokenized with the model's special tokens, and cut by the tokenizer when truncation
   * is on (the special tokens stay); token ids are used as given and cut here. With truncation
   * off, an input over the model's limit is refused.
   */
  private async encodeInput(input: TextInput, options: TruncateOptions & PromptOptions): Promise<TextEncoding> {
    const max = this.spec.maxInputLength;
    const cut = options.truncate ?? this.options.limits.autoTruncate;
    const direction = options.truncationDirection ?? 'right';
    if (typeof input !== 'string') {
      this.checkIds(input);
      if (input.length > max && !cut) throw createError('SF_ERR_TEXT_TOO_LONG', max, input.length);
      const kept = input.length <= max ? input : direction === 'right' ? input.slice(0, max) : input.slice(input.length - max);
      return idsEncoding(kept, input.length);
    }
    // TEI bounds the request's own text by characters, before the prompt is added.
    const text = this.withPrompt(admittedText(input, { maxInputLength: max, cut, direction }), options.promptName ?? this.spec.defaultPromptName);
    return this.encoded(() => this.tokenizer.encode(text, cut ? { maxLength: max, direction } : {}, options.signal));
  }

  /** A pair is cut LongestFirst by the tokenizer when truncation is on, as TEI's /rerank and /predict do. */
  private async encodePair(first: string, second: string, options: TruncateOptions): Promise<TextEncoding> {
    const cut = options.truncate ?? this.options.limits.autoTruncate;
    const direction = options.truncationDirection ?? 'right';
    const maxInputLength = this.spec.maxInputLength;
    const [a, b] = admittedPair(first, second, { maxInputLength, cut, direction });
    return this.encoded(() => this.tokenizer.encodePair(a, b, cut ? { maxLength: maxInputLength, direction } : {}, options.signal));
  }

  /** Runs the tokenizer: its failure is the request's (422 Tokenizer), and an uncut encoding over the limit is refused. */
  private async encoded(encode: () => Promise<TextEncoding>): Promise<TextEncoding> {
    let encoding: TextEncoding;
    try {
      encoding = await encode();
    } catch (err) {
      if (err instanceof ServeFnError) throw err;
      throw createError('SF_ERR_TOKENIZATION_FAILED', (err as Error)?.message ?? String(err), { cause: err });
    }
    if (encoding.ids.length > this.spec.maxInputLength) throw createError('SF_ERR_TEXT_TOO_LONG', this.spec.maxInputLength, encoding.untruncatedLength);
    return encoding;
  }

  private checkIds(ids: readonly number[]): void {
    const vocab = this.tokenizer.vocabSize;
    const bad = ids.find((id) => id >= vocab);
    if (bad !== undefined) throw createError('SF_ERR_TEXT_VALIDATION', `token id ${bad} is outside the vocabulary (0..${vocab - 1})`);
  }

  private checkClientBatch(count: number): void {
    const max = this.options.limits.maxClientBatchSize;
    if (count > max) throw createError('SF_ERR_TEXT_BATCH_TOO_LARGE', count, max);
  }

  private withPrompt(text: string, promptName: string | undefined): string {
    return promptName === undefined ? text : this.promptFor(promptName) + text;
  }

  private promptFor(promptName: string): string {
    // Own keys only: `constructor` or `__proto__` would otherwise find Object.prototype's members.
    const prompt = Object.hasOwn(this.spec.prompts, promptName) ? this.spec.prompts[promptName] : undefined;
    if (prompt === undefined) {
      const known = Object.keys(this.spec.prompts);
      throw createError('SF_ERR_TEXT_VALIDATION', `prompt_name '${promptName}' is not one of the model's prompts (${known.join(', ') || 'it has none'})`);
    }
    return prompt;
  }
}

/** Token ids as an encoding: no special tokens added. */
function idsEncoding(ids: readonly number[], untruncatedLength: number): TextEncoding {
  return {
    ids: Uint32Array.from(ids), typeIds: new Uint32Array(ids.length), special: new Uint8Array(ids.length),
    sequenceIds: new Int8Array(ids.length), untruncatedLength,
  };
}

/** TEI's x-compute-characters counts code points, as Rust counts chars; token-id inputs count none. */
function characters(input: TextInput): number {
  return typeof input === 'string' ? codePoints(input) : 0;
}

/**
 * The JSON size of token embeddings at its largest: a float32 written as a JS number takes at most
 * 24 bytes with its comma ("-1.4012984643248171e-45,"), and each vector and list its brackets.
 */
function tokenEmbeddingsBytes(tokens: number, inputs: number, width: number): number {
  return tokens * (width * 24 + 3) + inputs * 3;
}
