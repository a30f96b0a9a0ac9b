import { createError } from '../errors/index.js';

/**
 * Per-model statistics in the exact JSON shape of Triton's statistics extension
 * (`GET v2/models[/{name}[/versions/{version}]]/stats`), so Triton clients and perf tools can read
 * them unchanged.
 */

/** Times of one request, in microseconds, as the runtime measured them. */
export interface RequestTimings {
  requestUs: number;
  queueUs: number;
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
}

/** Times of one model execution (one batch), in microseconds. */
export interface BatchTimings {
  computeInputUs: number;
  computeInferUs: number;
  computeOutputUs: number;
}

export interface DurationStat {
  count: number;
  ns: number;
}

export interface InferenceStats {
  success: DurationStat;
  fail: DurationStat;
  queue: DurationStat;
  compute_input: DurationStat;
  compute_infer: DurationStat;
  compute_output: DurationStat;
  cache_hit: DurationStat;
  cache_miss: DurationStat;
}

/** Triton's per-response statistics of decoupled models; serve-fn has none, so the map stays empty. */
export interface ResponseStats {
  compute_infer: DurationStat;
  compute_output: DurationStat;
  success: DurationStat;
  fail: DurationStat;
  empty_response: DurationStat;
  cancel: DurationStat;
}

export interface BatchStats {
  batch_size: number;
  compute_input: DurationStat;
  compute_infer: DurationStat;
  compute_output: DurationStat;
}

export interface MemoryUsage {
  type: 'CPU' | 'CPU_PINNED' | 'GPU';
  id: number;
  byte_size: number;
}

export interface ModelStatistics {
  name: string;
  version: string;
  /** Milliseconds since the epoch of the last inference; 0 when the model never ran. */
  last_inference: number;
  /** Batch elements inferred: a batch of 4 adds 4. */
  inference_count: number;
  /** Model executions: a batch of 4 adds 1. */
  execution_count: number;
  inference_stats: InferenceStats;
  response_stats: Record<string, ResponseStats>;
  batch_stats: BatchStats[];
  memory_usage: MemoryUsage[];
}

export interface ModelStatisticsResponse {
  model_stats: ModelStatistics[];
}

interface BatchAccumulator {
  compute_input: DurationStat;
  compute_infer: DurationStat;
  compute_output: DurationStat;
}

interface ModelAccumulator {
  name: string;
  version: string;
  lastInference: number;
  inferenceCount: number;
  executionCount: number;
  inference: InferenceStats;
  batches: Map<number, BatchAccumulator>;
}

function emptyDuration(): DurationStat {
  return { count: 0, ns: 0 };
}

function add(stat: DurationStat, us: number): void {
  stat.count += 1;
  stat.ns += Math.round(us * 1000);
}

function copy(stat: DurationStat): DurationStat {
  return { count: stat.count, ns: stat.ns };
}

const versionOrder = new Intl.Collator('en', { numeric: true });

/** Accumulates statistics of every served model version and renders them as Triton JSON. */
export class ModelStatisticsStore {
  private readonly models = new Map<string, Map<string, ModelAccumulator>>();

  /** Adds a model version with zero statistics; returns false when it was already known. */
  register(model: string, version: string): boolean {
    let versions = this.models.get(model);
    if (!versions) {
      versions = new Map();
      this.models.set(model, versions);
    }
    if (versions.has(version)) return false;
    versions.set(version, {
      name: model,
      version,
      lastInference: 0,
      inferenceCount: 0,
      executionCount: 0,
      inference: {
        success: emptyDuration(),
        fail: emptyDuration(),
        queue: emptyDuration(),
        compute_input: emptyDuration(),
        compute_infer: emptyDuration(),
        compute_output: emptyDuration(),
        cache_hit: emptyDuration(),
        cache_miss: emptyDuration(),
      },
      batches: new Map(),
    });
    return true;
  }

  /** A request answered successfully: its own times count once each, whatever batch it ran in. */
  recordSuccess(model: string, version: string, t: RequestTimings, nowMs: number): void {
    const m = this.accumulator(model, version);
    add(m.inference.success, t.requestUs);
    add(m.inference.queue, t.queueUs);
    add(m.inference.compute_input, t.computeInputUs);
    add(m.inference.compute_infer, t.computeInferUs);
    add(m.inference.compute_output, t.computeOutputUs);
    m.lastInference = Math.max(m.lastInference, nowMs);
  }

  recordFailure(model: string, version: string, requestUs: number): void {
    add(this.accumulator(model, version).inference.fail, requestUs);
  }

  recordBatch(model: string, version: string, batchSize: number, t: BatchTimings, nowMs: number): void {
    const m = this.accumulator(model, version);
    m.inferenceCount += batchSize;
    m.executionCount += 1;
    m.lastInference = Math.max(m.lastInference, nowMs);
    let batch = m.batches.get(batchSize);
    if (!batch) {
      batch = { compute_input: emptyDuration(), compute_infer: emptyDuration(), compute_output: emptyDuration() };
      m.batches.set(batchSize, batch);
    }
    add(batch.compute_input, t.computeInputUs);
    add(batch.compute_infer, t.computeInferUs);
    add(batch.compute_output, t.computeOutputUs);
  }

  /**
   * Statistics of every model (no arguments), of every version of one model, or of one version,
   * ordered by name then version. Asking for a model or version never registered is an error,
   * as in Triton.
   */
  snapshot(model?: string, version?: string): ModelStatisticsResponse {
    const selected: ModelAccumulator[] = [];
    if (model === undefined) {
      for (const versions of this.models.values()) selected.push(...versions.values());
    } else {
      const versions = this.models.get(model);
      if (!versions) throw createError('SF_ERR_MODEL_UNKNOWN', model);
      if (version === undefined) {
        selected.push(...versions.values());
      } else {
        const one = versions.get(version);
        if (!one) throw createError('SF_ERR_MODEL_VERSION_UNKNOWN', model, version);
        selected.push(one);
      }
    }
    selected.sort((a, b) => (a.name === b.name ? versionOrder.compare(a.version, b.version) : a.name < b.name ? -1 : 1));
    return { model_stats: selected.map(render) };
  }

  private accumulator(model: string, version: string): ModelAccumulator {
    this.register(model, version);
    return this.models.get(model)!.get(version)!;
  }
}

function render(m: ModelAccumulator): ModelStatistics {
  const i = m.inference;
  return {
    name: m.name,
    version: m.version,
    last_inference: m.lastInference,
    inference_count: m.inferenceCount,
    execution_count: m.executionCount,
    inference_stats: {
      success: copy(i.success),
      fail: copy(i.fail),
      queue: copy(i.queue),
      compute_input: copy(i.compute_input),
      compute_infer: copy(i.compute_infer),
      compute_output: copy(i.compute_output),
      cache_hit: copy(i.cache_hit),
      cache_miss: copy(i.cache_miss),
    },
    response_stats: {},
    batch_stats: [...m.batches.entries()]
      .sort(([a], [b]) => a - b)
      .map(([batchSize, b]) => ({
        batch_size: batchSize,
        compute_input: copy(b.compute_input),
        compute_infer: copy(b.compute_infer),
        compute_output: copy(b.compute_output),
      })),
    memory_usage: [],
  };
}
