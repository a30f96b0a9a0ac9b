import type { PoolingMode } from '../../text/pooling.js';
import type { TextModel } from '../../text/text-model.js';

/** TEI's `Info` (router/src/lib.rs), the body of GET /info. */
export interface TeiInfo {
  readonly model_id: string;
  readonly model_sha: string | null;
  readonly model_dtype: string;
  readonly served_model_name: string;
  readonly model_type: { embedding: { pooling: string } } | { classifier: ClassifierLabels } | { reranker: ClassifierLabels };
  readonly max_concurrent_requests: number;
  readonly max_input_length: number;
  readonly max_batch_tokens: number;
  readonly max_batch_requests: number | null;
  readonly max_client_batch_size: number;
  readonly auto_truncate: boolean;
  readonly tokenization_workers: number;
  readonly version: string;
  readonly sha: string | null;
  readonly docker_label: string | null;
}

interface ClassifierLabels {
  readonly id2label: Record<string, string>;
  readonly label2id: Record<string, number>;
}

/** TEI's names of its poolings (its `Pool` Display: cls, mean, splade, last_token), underscored as TEI writes them. */
function poolingName(mode: PoolingMode | undefined): string {
  return (mode ?? 'cls').replaceAll('-', '_');
}

function labels(names: readonly string[]): ClassifierLabels {
  return {
    id2label: Object.fromEntries(names.map((label, id) => [String(id), label])),
    label2id: Object.fromEntries(names.map((label, id) => [label, id])),
  };
}

/**
 * What TEI's /info says of `model`. serve-fn reads a local folder, so there is no Hub revision
 * (`model_sha` null) and no build sha or Docker label; `version` is serve-fn's. The dtype is the
 * served file's: float16 for `--dtype float16` (model_fp16.onnx), else float32.
 */
export function teiInfo(model: TextModel, version: string): TeiInfo {
  const { info } = model;
  const { limits } = info;
  const modelType =
    info.task === 'classify' ? { classifier: labels(info.labels) } : info.task === 'rerank' ? { reranker: labels(info.labels) } : { embedding: { pooling: poolingName(info.pooling) } };
  return {
    model_id: info.modelId,
    model_sha: null,
    model_dtype: info.dtype,
    served_model_name: info.name,
    model_type: modelType,
    max_concurrent_requests: limits.maxConcurrentRequests,
    max_input_length: info.maxInputLength,
    max_batch_tokens: limits.maxBatchTokens,
    max_batch_requests: limits.maxBatchRequests ?? null,
    max_client_batch_size: limits.maxClientBatchSize,
    auto_truncate: limits.autoTruncate,
    tokenization_workers: tokenizationWorkers(),
    version,
    sha: null,
    docker_label: null,
  };
}

/**
 * TEI's tokenizer threads. HF tokenizers' Node binding encodes as N-API async work, which runs on
 * libuv's thread pool: UV_THREADPOOL_SIZE threads, 4 unless set (Node's docs, "UV_THREADPOOL_SIZE").
 */
function tokenizationWorkers(): number {
  const size = Number(process.env.UV_THREADPOOL_SIZE);
  return Number.isInteger(size) && size > 0 ? size : 4;
}
