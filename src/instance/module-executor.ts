import { pathToFileURL } from 'node:url';
import type { ModelContext } from '../definition/model-context.js';
import { createError, isErrorCode, serializeError, type ServeFnError } from '../errors/index.js';
import { oneResultPerRequest } from '../wire/batch-results.js';
import type { WireResult } from '../wire/wire-format.js';
import { checkTensorAgainstSpec, createTensor, withBatchDim } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import type { TensorExecutor } from './backend-executor.js';
import { REQUEST_FLAG_SEQUENCE_END, REQUEST_FLAG_SEQUENCE_START, type DecoupledResponse, type DecoupledTensorModel, type ExecuteRequest, type ExecuteResponse, type TensorModel } from './tensor-model-api.js';
import type { StreamedResult, TensorModelPlan, TensorWireRequest, TensorWireResult } from '../wire/tensor-model-plan.js';
import type { ConfigTensor } from '../spec/config-tensor.js';

type AnyTensorModel = TensorModel | DecoupledTensorModel;

/** What each response is checked against, and where those outputs are declared (named in the error). */
interface DeclaredOutputs extends Pick<TensorModelPlan, 'maxBatchSize' | 'outputs'> {
  readonly declaredIn: string;
}
type TensorModelClass = new () => AnyTensorModel;

class WireExecuteRequest implements ExecuteRequest {
  readonly id?: string;
  readonly inputs: readonly Tensor[];
  readonly requestedOutputNames: readonly string[];
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly correlationId: number | string;
  readonly flags: number;

  constructor(wire: TensorWireRequest) {
    this.id = wire.id;
    this.inputs = wire.inputs;
    this.requestedOutputNames = wire.outputs;
    this.parameters = wire.parameters;
    this.correlationId = wire.sequence?.correlationId ?? 0;
    this.flags = (wire.sequence?.start ? REQUEST_FLAG_SEQUENCE_START : 0) | (wire.sequence?.end ? REQUEST_FLAG_SEQUENCE_END : 0);
  }

  input(name: string): Tensor | undefined {
    return this.inputs.find((t) => t.name === name);
  }
}

/**
 * A repository model.ts / model.js (Triton's Python backend): one instance of the user's class per
 * model instance, called with every request of an execution. Each response is checked against
 * the configured outputs, so a model bug fails its request with a 500 naming the output. A decoupled
 * model (tensor-model-api.ts, DecoupledTensorModel) is called once per request and streams its
 * responses through `stream`.
 */
export class ModuleExecutor implements TensorExecutor {
  private constructor(
    private readonly plan: DeclaredOutputs,
    private readonly modelName: string,
    private readonly model: AnyTensorModel,
    readonly decoupled: boolean,
  ) {}

  static async start(plan: TensorModelPlan, ctx: ModelContext): Promise<ModuleExecutor> {
    const fail = (why: string): ServeFnError => createError('SF_ERR_INITIALIZE_FAILED', ctx.modelName, ctx.instanceIndex, why);
    const exports = (await import(pathToFileURL(plan.file).href)) as Record<string, unknown>;
    const ModelClass = findModelClass(exports);
    if (!ModelClass) throw fail(`${plan.file} exports no class with an execute(requests) method; export one as the default export`);
    let model: AnyTensorModel;
    try {
      model = new ModelClass();
      await model.initialize?.(ctx);
    } catch (err) {
      // The cause crosses the thread with the error (serializeError), so an NPU's own error stays findable.
      throw createError('SF_ERR_INITIALIZE_FAILED', ctx.modelName, ctx.instanceIndex, (err as Error)?.message ?? String(err), { cause: err });
    }
    return new ModuleExecutor({ ...plan, declaredIn: 'config.pbtxt' }, ctx.modelName, model, isDecoupledConfig(ctx.config));
  }

  /** Runs a decorated class's `execute` against the outputs its @Tensors declares; the class's own host runs its hooks. */
  static forTensorInterface(model: TensorModel, tensors: Pick<TensorModelPlan, 'maxBatchSize' | 'outputs'>, modelName: string): ModuleExecutor {
    return new ModuleExecutor({ maxBatchSize: tensors.maxBatchSize, outputs: tensors.outputs, declaredIn: '@Tensors' }, modelName, model, false);
  }

  /**
   * One execution of every request. A decoupled model (reached here only by warmup, which runs
   * outside the streaming path) answers each request with its last response, or none.
   */
  async run(requests: readonly TensorWireRequest[]): Promise<WireResult[]> {
    if (this.decoupled) return Promise.all(requests.map((request) => this.lastOf(request)));
    const responses: unknown = await (this.model as TensorModel).execute(requests.map((r) => new WireExecuteRequest(r)));
    return oneResultPerRequest(`${this.modelName}.execute`, responses, requests.length).map((response, i) => {
      try {
        return { ok: true, value: this.toResult(response as ExecuteResponse, requests[i]) };
      } catch (err) {
        return { ok: false, error: serializeError(err) };
      }
    });
  }

  /**
   * A decoupled model's responses to one request, each checked against the configured outputs.
   * A checked response marked final is the last: the model's iterable is closed after it.
   */
  async *stream(request: TensorWireRequest): AsyncGenerator<StreamedResult, void, undefined> {
    const produced: unknown = (this.model as DecoupledTensorModel).execute(new WireExecuteRequest(request));
    const iterable = produced as Partial<AsyncIterable<unknown> & Iterable<unknown>> | null | undefined;
    if (typeof iterable?.[Symbol.asyncIterator] !== 'function' && typeof iterable?.[Symbol.iterator] !== 'function') {
      throw this.failure(`returned ${describe(produced)}; a decoupled model's execute(request) returns an iterable of responses, e.g. as an async generator (async *execute)`);
    }
    for await (const response of iterable as AsyncIterable<DecoupledResponse>) {
      const final = response !== null && typeof response === 'object' && response.final === true;
      yield { result: this.toResult(response, request), final };
      if (final) return;
    }
  }

  async finalize(): Promise<void> {
    await this.model.finalize?.();
  }

  private async lastOf(request: TensorWireRequest): Promise<WireResult> {
    try {
      let last: TensorWireResult = { outputs: [] };
      for await (const { result } of this.stream(request)) last = result;
      return { ok: true, value: last };
    } catch (err) {
      return { ok: false, error: serializeError(err) };
    }
  }

  private toResult(response: ExecuteResponse, request: TensorWireRequest): TensorWireResult {
    if (response === null || typeof response !== 'object') throw this.failure(`returned ${describe(response)} as a response; return { outputs } or { error }`);
    if ('error' in response) {
      const { error } = response;
      // By its code, not instanceof: a model importing 'serve-fn' from dist has its own ServeFnError class.
      if (error instanceof Error && isErrorCode((error as { code?: unknown }).code)) throw error;
      throw this.failure(error instanceof Error ? error.message : String(error));
    }
    if (!Array.isArray(response.outputs)) throw this.failure('returned a response without an outputs array');
    const outputs = new Map<string, Tensor>();
    for (const tensor of response.outputs) {
      const spec = this.plan.outputs.find((o) => o.name === tensor?.name);
      if (!spec) throw this.failure(`returned output '${tensor?.name}', which ${this.plan.declaredIn} does not declare`);
      outputs.set(spec.name, this.checkOutput(tensor, spec));
    }
    const missing = request.outputs.find((name) => !outputs.has(name));
    if (missing !== undefined) throw this.failure(`returned no output '${missing}', which the request asked for`);
    return { outputs: request.outputs.map((name) => outputs.get(name)!), parameters: response.parameters };
  }

  private checkOutput(tensor: Tensor, spec: ConfigTensor): Tensor {
    try {
      const checked = createTensor(tensor.name, tensor.datatype, tensor.shape, tensor.data);
      checkTensorAgainstSpec(checked, { name: spec.name, datatype: spec.datatype, shape: withBatchDim(spec.dims, this.plan.maxBatchSize) });
      return checked;
    } catch (err) {
      throw this.failure(`output '${spec.name}': ${(err as Error).message}`);
    }
  }

  private failure(why: string): ServeFnError {
    return createError('SF_ERR_EXECUTION_FAILED', this.modelName, 'execute', why);
  }
}

function findModelClass(exports: Record<string, unknown>): TensorModelClass | undefined {
  const isModelClass = (value: unknown): value is TensorModelClass =>
    typeof value === 'function' && typeof (value.prototype as { execute?: unknown } | undefined)?.execute === 'function';
  if (isModelClass(exports.default)) return exports.default;
  const named = Object.values(exports).filter(isModelClass);
  return named.length === 1 ? named[0] : undefined;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  return typeof value === 'object' ? (value.constructor?.name ?? 'an object') : `a ${typeof value}`;
}

/** Whether a model configuration, as JSON (ModelContext.config), declares the model decoupled. */
function isDecoupledConfig(config: Readonly<Record<string, unknown>>): boolean {
  const policy = config.model_transaction_policy as { decoupled?: unknown } | undefined;
  return policy?.decoupled === true;
}
