import { createError } from '../errors/index.js';
import type { RequestTrace } from './request-tracing.js';

/**
 * Triton's trace extension (https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_trace.md,
 * user_guide/trace.md) mapped onto the OpenTelemetry pipeline: the settings say which requests get
 * a model's spans (`queue`, `compute`, `batch`, `stream`, `session`); the OTLP exporter sends them.
 * The server spans of HTTP and gRPC follow `OTEL_TRACES_SAMPLER` alone.
 *
 * - `trace_level`: `OFF` turns the model's spans off, `TIMESTAMPS` on (the spans are split at
 *   Triton's timestamps). `TENSORS` is refused: spans carry no tensor data.
 * - `trace_rate`: 1 request in N gets the spans.
 * - `trace_count`: how many more requests get them, `-1` without a cap; it counts down as Triton's does.
 * - `trace_mode`: `opentelemetry`, as Triton's `--trace-config mode=opentelemetry`; not changeable.
 * - `trace_file`, `log_frequency`: Triton's file output of its `triton` mode, which OpenTelemetry
 *   mode does not use: reported empty and `0`, any other value refused.
 *
 * Where Triton's defaults differ: tracing is already asked for by `OTEL_EXPORTER_OTLP_ENDPOINT`, so
 * once on every request is traced (`TIMESTAMPS`, rate 1; sample with `OTEL_TRACES_SAMPLER`); with
 * tracing off the level is `OFF` and cannot be raised, since nothing would export the spans.
 */
export type TraceSettingsResponse = Record<string, string | string[]>;

interface Values {
  level: 'OFF' | 'TIMESTAMPS';
  rate: number;
  count: number;
}

type Key = keyof Values;

/** One scope's values and its sampling state: the global settings, or a model's that override some. */
interface Scope {
  readonly values: Partial<Values>;
  /** Requests seen while rate > 1: every rate-th is traced. */
  seen: number;
}

const FIELDS: Readonly<Record<string, Key | 'file' | 'frequency' | 'mode'>> = {
  trace_level: 'level',
  trace_rate: 'rate',
  trace_count: 'count',
  trace_file: 'file',
  log_frequency: 'frequency',
  trace_mode: 'mode',
};

export const TRACE_MODE = 'opentelemetry';

export class TraceSettings {
  private readonly defaults: Values;
  private readonly global: Scope = { values: {}, seen: 0 };
  private readonly models = new Map<string, Scope>();

  /** `enabled`: whether spans are exported at all (tracingRequested). */
  constructor(private readonly enabled: boolean) {
    this.defaults = { level: enabled ? 'TIMESTAMPS' : 'OFF', rate: 1, count: -1 };
  }

  /** The settings of `model` (its own over the global ones), or the global ones, in Triton's shape. */
  get(model?: string): TraceSettingsResponse {
    const values = this.effective(model);
    return {
      trace_level: [values.level],
      trace_rate: String(values.rate),
      trace_count: String(values.count),
      log_frequency: '0',
      trace_file: '',
      trace_mode: TRACE_MODE,
    };
  }

  /**
   * Applies a request's settings and answers the result, as Triton's POST: a setting set to null
   * goes back to the global value (a model's) or the default (global); a model's request with no
   * settings drops the model's own. Checked whole before anything changes.
   */
  update(model: string | undefined, settings: Readonly<Record<string, unknown>>): TraceSettingsResponse {
    const entries = Object.entries(settings);
    if (model !== undefined && entries.length === 0) {
      this.models.delete(model);
      return this.get(model);
    }
    const changes = entries.map(([name, value]) => this.parse(name, value));
    const scope = model === undefined ? this.global : this.modelScope(model);
    for (const [key, value] of changes) {
      if (key === undefined) continue;
      if (value === undefined) delete scope.values[key];
      else (scope.values as Record<Key, unknown>)[key] = value;
    }
    scope.seen = 0;
    return this.get(model);
  }

  /**
   * `trace` when `model`'s settings give this request its spans, else undefined; counts the
   * request toward the rate and the count.
   */
  admit(model: string, trace: RequestTrace | undefined): RequestTrace | undefined {
    if (!trace) return undefined;
    const scope = this.models.get(model) ?? this.global;
    const values = this.effective(model);
    if (values.level === 'OFF' || values.count === 0) return undefined;
    if (values.rate > 1 && scope.seen++ % values.rate !== 0) return undefined;
    if (values.count > 0) (scope.values.count !== undefined ? scope : this.global).values.count = values.count - 1;
    return trace;
  }

  private effective(model: string | undefined): Values {
    const own = model === undefined ? undefined : this.models.get(model)?.values;
    return { ...this.defaults, ...this.global.values, ...own };
  }

  private modelScope(model: string): Scope {
    let scope = this.models.get(model);
    if (!scope) {
      scope = { values: {}, seen: 0 };
      this.models.set(model, scope);
    }
    return scope;
  }

  /** One setting as [field, value]; value undefined clears it. Field undefined: accepted, nothing to keep. */
  private parse(name: string, raw: unknown): [Key | undefined, Values[Key] | undefined] {
    const field = FIELDS[name];
    const invalid = (why: string) => createError('SF_ERR_TRACE_SETTING_INVALID', name, why);
    if (field === undefined) throw invalid(`is unknown: use ${Object.keys(FIELDS).join(', ')}`);
    if (raw === null) return [field === 'level' || field === 'rate' || field === 'count' ? field : undefined, undefined];
    // Triton's clients send each value as a string, trace_level as a list of strings.
    const list = Array.isArray(raw) ? raw : [raw];
    if (list.length !== 1 || (typeof list[0] !== 'string' && typeof list[0] !== 'number')) throw invalid('takes one string value');
    const value = String(list[0]).trim();
    if (field === 'level') {
      const level = value.toUpperCase();
      if (level === 'TENSORS') throw invalid("'TENSORS' is not supported: spans carry no tensor data; use TIMESTAMPS or OFF");
      if (level !== 'OFF' && level !== 'TIMESTAMPS') throw invalid(`'${value}' is not a level: use OFF or TIMESTAMPS`);
      if (level === 'TIMESTAMPS' && !this.enabled) throw invalid('cannot be TIMESTAMPS while tracing is off: set OTEL_EXPORTER_OTLP_ENDPOINT (docs/tracing.md)');
      return ['level', level];
    }
    if (field === 'rate' || field === 'count') {
      const min = field === 'rate' ? 1 : -1;
      if (!/^-?\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value))) throw invalid(`must be an integer of at least ${min}, got '${value}'`);
      return [field, Number(value)];
    }
    if (field === 'mode') {
      if (value !== TRACE_MODE) throw invalid(`is '${TRACE_MODE}' and cannot be changed: spans are exported by OTLP`);
      return [undefined, undefined];
    }
    if ((field === 'file' && value !== '') || (field === 'frequency' && value !== '0')) {
      throw invalid(`belongs to Triton's 'triton' trace mode; in '${TRACE_MODE}' mode spans are exported by OTLP (OTEL_EXPORTER_OTLP_ENDPOINT)`);
    }
    return [undefined, undefined];
  }
}
