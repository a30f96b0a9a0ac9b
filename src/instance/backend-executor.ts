import type { BackendSession } from '../backends/backend.js';
import type { ModelContext } from '../definition/model-context.js';
import type { Tensor } from '../spec/tensor.js';
import type { WireResult } from '../wire/wire-format.js';
import { concatBatch, reshapeTensor, splitBatch } from '../tensor/tensor-batching.js';
import type { TensorModelPlan, TensorWireRequest, TensorWireResult } from '../wire/tensor-model-plan.js';
import type { ConfigTensor } from '../spec/config-tensor.js';

/** Runs one execution of a model file (ONNX, OM) for the requests of one batch. */
export interface TensorExecutor {
  run(requests: readonly TensorWireRequest[]): Promise<WireResult[]>;
  finalize(): Promise<void>;
}

/**
 * A config-only model: the instance's session runs the requests of an execution as one batch,
 * joined along dimension 0, and each request gets its own rows of the outputs it asked for.
 */
export class BackendExecutor implements TensorExecutor {
  private constructor(
    private readonly plan: TensorModelPlan,
    private readonly session: BackendSession,
  ) {}

  /** The session is opened through ctx.loadModel, which disposes of it after finalize. */
  static async start(plan: TensorModelPlan, ctx: ModelContext): Promise<BackendExecutor> {
    const session = await ctx.loadModel(plan.file, { options: plan.sessionOptions });
    return new BackendExecutor(plan, session);
  }

  async run(requests: readonly TensorWireRequest[]): Promise<WireResult[]> {
    const batched = this.plan.maxBatchSize > 0;
    const rows = requests.map((r) => (batched ? (r.inputs[0]?.shape[0] ?? 1) : 1));
    const feeds: Record<string, Tensor> = {};
    for (const spec of this.plan.inputs) {
      const parts = requests.flatMap((r) => r.inputs.filter((t) => t.name === spec.name));
      // An optional input is left out by every request of an execution or by none (same signature).
      if (parts.length === 0) continue;
      const joined = concatBatch(spec.name, parts);
      feeds[spec.name] = spec.reshape ? reshapeTensor(joined, withBatch(batched, joined, spec.reshape)) : joined;
    }
    const wanted = [...new Set(requests.flatMap((r) => r.outputs))];
    const produced = await this.session.run(feeds, wanted);
    const pieces = new Map<string, Tensor[]>();
    for (const name of wanted) {
      const tensor = this.toConfigShape(produced[name], this.outputSpec(name), batched);
      pieces.set(name, batched ? splitBatch(tensor, rows) : [tensor]);
    }
    return requests.map((request, i) => {
      const result: TensorWireResult = { outputs: request.outputs.map((name) => pieces.get(name)![i]) };
      return { ok: true, value: result };
    });
  }

  finalize(): Promise<void> {
    return Promise.resolve();
  }

  private outputSpec(name: string): ConfigTensor {
    return this.plan.outputs.find((o) => o.name === name)!;
  }

  private toConfigShape(tensor: Tensor, spec: ConfigTensor, batched: boolean): Tensor {
    return spec.reshape ? reshapeTensor(tensor, withBatch(batched, tensor, spec.dims)) : tensor;
  }
}

function withBatch(batched: boolean, tensor: Tensor, dims: readonly number[]): number[] {
  return batched ? [tensor.shape[0] ?? 1, ...dims] : [...dims];
}
