import type { TextTask } from './model-folder.js';
import type { PoolingMode } from './pooling.js';
import type { TextMetrics } from './text-metrics.js';

/** TEI's batching and admission knobs, named as its flags are (docs/source/en/cli_arguments.md). */
export interface TextLimits {
  /** --max-batch-tokens: padded tokens (rows × longest) per forward batch. */
  readonly maxBatchTokens: number;
  /** --max-batch-requests: rows per forward batch; unset = the token budget alone decides. */
  readonly maxBatchRequests?: number;
  /** --max-client-batch-size: inputs per request. */
  readonly maxClientBatchSize: number;
  /**
   * --max-concurrent-requests: permits, taken without waiting; an input takes one, or more when
   * its texts or its answer are long (text-permits.ts).
   */
  readonly maxConcurrentRequests: number;
  /** --auto-truncate: what a request that says nothing about truncation gets. */
  readonly autoTruncate: boolean;
  /**
   * --batch-by-length (serve-fn's; TEI batches first come, first served): a forward batch is the
   * oldest queued text and those nearest its length, so less of each padded batch is padding.
   */
  readonly batchByLength: boolean;
  /**
   * --max-answer-bytes (serve-fn's; TEI has none): the largest /embed_all answer, a vector a token,
   * checked before the forward pass at its JSON size, so no answer is too long to write.
   */
  readonly maxAnswerBytes: number;
}

export const DEFAULT_TEXT_LIMITS: TextLimits = Object.freeze({
  maxBatchTokens: 16384, maxClientBatchSize: 32, maxConcurrentRequests: 512, autoTruncate: true, batchByLength: true, maxAnswerBytes: 32 * 1024 * 1024,
});

/** What the model is: read from its folder (model-folder.ts) or from its class's @TextModel. */
export interface TextModelSpec {
  /** The served name (--served-model-name, or the folder's or @Model's name). */
  readonly name: string;
  /** Where it came from: the folder's path or the class's name (TEI's `model_id`). */
  readonly modelId: string;
  readonly task: TextTask;
  readonly pooling: PoolingMode;
  readonly maxInputLength: number;
  readonly prompts: Readonly<Record<string, string>>;
  readonly defaultPromptName?: string;
  /** id2label, in id order. */
  readonly labels: readonly string[];
  /** The embedding width, when known before the first forward pass (config.json's hidden_size). */
  readonly dimensions?: number;
}

export interface TextModelOptions {
  readonly limits: TextLimits;
  readonly metrics?: TextMetrics;
  /** Where the forward pass runs (TEI's x-compute-type): 'cpu', 'gpu', 'npu'. */
  readonly computeType: string;
  /** The forward model's float type, as TEI's /info `model_dtype` names it; float32 unless said. */
  readonly dtype?: 'float32' | 'float16';
  /** Where a failed forward pass is reported, with its error (the answer carries only its code). */
  readonly log?: (message: string, err: unknown) => void;
}

export interface TextModelInfo {
  readonly name: string;
  readonly modelId: string;
  readonly task: TextTask;
  readonly pooling: PoolingMode;
  /** Embedding width, once a forward pass has shown it. */
  readonly dimensions?: number;
  readonly labels: readonly string[];
  readonly maxInputLength: number;
  readonly prompts: Readonly<Record<string, string>>;
  readonly limits: TextLimits;
  readonly computeType: string;
  readonly dtype: 'float32' | 'float16';
}
