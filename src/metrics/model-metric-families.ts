import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * How a model kind registers its Prometheus families (TEI's `te_*`, vLLM's `vllm:*`, the
 * `serve_fn_diffusion_*` ones): prom-client metrics on the server's registry, every series labelled
 * first by the model it counts (`model`, or vLLM's `model_name`), then by any labels of its own.
 * A kind registers its families once per registry (one metrics object per server), as prom-client
 * requires of a name.
 */
export class ModelMetricFamilies<M extends string> {
  private readonly registers: Registry[];

  constructor(
    registry: Registry,
    private readonly modelLabel: M,
  ) {
    this.registers = [registry];
  }

  counter<L extends string = never>(name: string, help: string, labels: readonly L[] = []): Counter<M | L> {
    return new Counter<M | L>({ name, help, labelNames: [this.modelLabel, ...labels], registers: this.registers });
  }

  histogram<L extends string = never>(name: string, help: string, buckets: readonly number[], labels: readonly L[] = []): Histogram<M | L> {
    return new Histogram<M | L>({ name, help, labelNames: [this.modelLabel, ...labels], buckets: [...buckets], registers: this.registers });
  }

  /** A gauge set as things change or, with `collect`, read at each scrape (`set(model, value)` per model). */
  gauge(name: string, help: string, collect?: (set: (model: string, value: number) => void) => void): Gauge<M> {
    const modelLabel = this.modelLabel;
    return new Gauge<M>({
      name, help, labelNames: [modelLabel], registers: this.registers,
      ...(collect && {
        collect(this: Gauge<M>) {
          collect((model, value) => this.set({ [modelLabel]: model } as Record<M, string>, value));
        },
      }),
    });
  }
}
