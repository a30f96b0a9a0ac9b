import { createError } from '../../errors/index.js';
import { concatBatch, firstRows, splitBatch } from '../../tensor/tensor-batching.js';
import { DATATYPE_INFO } from '../../tensor/datatype-info.js';
import { checkTensorAgainstSpec, createTensor, elementCount, formatShape } from '../../tensor/tensor-factory.js';
import type { Datatype, Tensor } from '../../spec/tensor.js';
import type { BackendMetadata, BackendSession } from '../backend.js';
import { distributeRows, executionRows, gearFor } from './batch-gears.js';
import { ExecutionSlots } from './ge-slots.js';
import type { NativeGeModel, NativeGeOutput, NativeGeTensor } from './native-binding.js';
import { fromNativeError } from './npu-errors.js';
import { aclDataTypeOf, inputBytes, inputFor, refuseUnexpectedInputs, selectOutputs, tensorBytes, tensorData } from './npu-tensors.js';

const BACKEND = 'npu_ge';

/** One execution: `rows` consecutive rows of the batch, padded up to `gear` rows. */
interface Piece {
  readonly rows: number;
  readonly gear: number;
}

/**
 * An ONNX model compiled by GE on one NPU, with its execution slots. A batch is spread over the
 * slots idle when it arrives (waiting for one when all are busy), each slot running its rows in
 * executions of at most the largest compiled batch size, padded with zero rows up to a compiled
 * size and trimmed back; the outputs are joined again in row order. Inputs are checked here
 * against the ONNX file's inputs as the load's shape options narrow them, so callers get
 * SF_ERR_TENSOR_* errors.
 */
export class GeSession implements BackendSession {
  readonly backend = BACKEND;
  readonly #model: NativeGeModel;
  readonly #metadata: BackendMetadata;
  readonly #gears: readonly number[] | undefined;
  readonly #batched: boolean;
  readonly #label: string;
  readonly #slots: ExecutionSlots;
  readonly #running = new Set<Promise<unknown>>();
  #disposed = false;

  /** `gears`: the batch sizes the graph is compiled for, ascending; undefined when it takes any. */
  constructor(model: NativeGeModel, metadata: BackendMetadata, gears: readonly number[] | undefined, label: string) {
    this.#model = model;
    this.#metadata = metadata;
    this.#gears = gears;
    this.#label = label;
    this.#slots = new ExecutionSlots(model.slots);
    // Rows can be split only when every input and output has a variable first dimension.
    this.#batched = [...metadata.inputs, ...metadata.outputs].every((spec) => spec.shape.length > 0 && spec.shape[0] === -1);
  }

  metadata(): BackendMetadata {
    return this.#metadata;
  }

  async run(inputs: Readonly<Record<string, Tensor>>, outputNames?: readonly string[]): Promise<Record<string, Tensor>> {
    if (this.#disposed) throw this.#runFailed('the session has been disposed');
    const wanted = selectOutputs(this.#metadata, outputNames, this.#label);
    const { feeds, rows } = this.#checkInputs(inputs);
    const running = this.#runBatch(feeds, rows);
    this.#running.add(running);
    try {
      const joined = await running;
      return Object.fromEntries(Object.entries(joined).filter(([name]) => wanted.has(name)));
    } finally {
      this.#running.delete(running);
    }
  }

  /** Refuses new runs, lets the running ones finish, then unloads the graphs and sessions. */
  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await Promise.allSettled([...this.#running]);
    try {
      await this.#model.unload();
    } catch (err) {
      throw fromNativeError(err, (message, cause) => this.#runFailed(message, cause));
    }
  }

  async #runBatch(feeds: readonly Tensor[], rows: number): Promise<Record<string, Tensor>> {
    if (!this.#batched) {
      const [slot] = await this.#slots.acquire(1);
      try {
        return this.#outputsByName(await this.#execute(slot, feeds, { rows, gear: rows }));
      } finally {
        this.#slots.release(slot);
      }
    }
    const slots = await this.#slots.acquire(rows);
    const shares = distributeRows(rows, slots.length);
    // Every execution of every slot, in row order, so each input is cut (copied) once, straight into them.
    const executions = shares.flatMap((share, s) => executionRows(share, this.#gears).map((n) => ({ s, n })));
    const byExecution = feeds.map((feed) => splitBatch(feed, executions.map(({ n }) => n)));
    const runs = slots.map(async (slot, s) => {
      const results: Tensor[][] = [];
      for (const [e, execution] of executions.entries()) {
        if (execution.s !== s) continue;
        // executionRows keeps each execution within the largest gear, so gearFor finds one.
        const piece = { rows: execution.n, gear: gearFor(this.#gears, execution.n)! };
        results.push(await this.#execute(slot, byExecution.map((parts) => parts[e]), piece));
      }
      return results;
    });
    const settled = await Promise.allSettled(runs);
    // Released together: the rows are spread evenly, so the slots finish about together, and a
    // waiting batch then gets all of them rather than the first one freed.
    this.#slots.release(...slots);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const pieces = settled.flatMap((r) => (r as PromiseFulfilledResult<Tensor[][]>).value);
    return this.#outputsByName(this.#metadata.outputs.map((spec, o) => concatBatch(spec.name, pieces.map((outputs) => outputs[o]))));
  }

  /** One ExecuteGraphWithStreamAsync: pads the piece to its gear, types the outputs and trims the padding off. */
  async #execute(slot: number, inputs: readonly Tensor[], piece: Piece): Promise<Tensor[]> {
    const padded = piece.gear === piece.rows ? inputs : inputs.map((t) => padRows(t, piece.gear));
    const native: NativeGeTensor[] = padded.map((t) => ({ data: tensorBytes(t.datatype, t.data)!, dims: t.shape, dataType: aclDataTypeOf(t.datatype)! }));
    let produced: { data: ArrayBuffer; dims: number[] }[];
    try {
      produced = await this.#model.execute(slot, native, this.#outputRequests(piece.gear));
    } catch (err) {
      throw fromNativeError(err, (message, cause) => this.#runFailed(message, cause));
    }
    return this.#metadata.outputs.map((spec, o) => {
      const { data, dims } = produced[o];
      const tensor = createTensor(spec.name, spec.datatype, dims, tensorData(spec.datatype as Exclude<Datatype, 'BYTES'>, data));
      return this.#batched && piece.gear !== piece.rows ? firstRows(tensor, piece.rows, piece.gear) : tensor;
    });
  }

  /** Output dims when the model fixes them (the batch being `gear`), so the addon allocates them; otherwise GE does. */
  #outputRequests(gear: number): NativeGeOutput[] {
    return this.#metadata.outputs.map((spec) => {
      const dims = spec.shape.map((d, i) => (i === 0 && this.#batched ? gear : d));
      // GeBackend refuses models with a tensor that has no ge::DataType (BYTES) before a session exists.
      const dataType = aclDataTypeOf(spec.datatype)!;
      return dims.every((d) => d >= 0) ? { dataType, dims } : { dataType };
    });
  }

  #outputsByName(outputs: readonly Tensor[]): Record<string, Tensor> {
    return Object.fromEntries(outputs.map((t) => [t.name, t]));
  }

  /** The inputs in the model's order, each checked against its spec, and the batch's rows. */
  #checkInputs(inputs: Readonly<Record<string, Tensor>>): { feeds: Tensor[]; rows: number } {
    refuseUnexpectedInputs(this.#metadata, inputs, this.#label);
    const feeds = this.#metadata.inputs.map((spec) => {
      const given = inputFor(spec, inputs, this.#label);
      const tensor = given.name === spec.name ? given : { ...given, name: spec.name };
      checkTensorAgainstSpec(tensor, spec);
      inputBytes(spec, tensor, formatShape);
      return tensor;
    });
    const rows = this.#batched ? feeds[0]?.shape[0] ?? 1 : 1;
    if (this.#batched) {
      const other = feeds.find((t) => t.shape[0] !== rows);
      if (other) throw createError('SF_ERR_TENSOR_SHAPE', other.name, formatShape([rows, ...other.shape.slice(1)]), formatShape(other.shape));
      if (rows < 1) throw createError('SF_ERR_TENSOR_SHAPE', feeds[0].name, formatShape([-1, ...feeds[0].shape.slice(1)]), formatShape(feeds[0].shape));
    }
    return { feeds, rows };
  }

  #runFailed(message: string, cause?: { cause: unknown }) {
    return createError('SF_ERR_BACKEND_RUN_FAILED', BACKEND, this.#label, message, ...(cause ? [cause] : []));
  }
}

/** `tensor` with zero rows after its own up to `gear` rows, a compiled batch size: one allocation, the zeros being the new array's. */
function padRows(tensor: Tensor, gear: number): Tensor {
  const shape = [gear, ...tensor.shape.slice(1)];
  const ArrayType = DATATYPE_INFO[tensor.datatype].arrayType!;
  const padded = new ArrayType(elementCount(shape));
  // GeBackend refuses BYTES tensors, so the data is a typed array of the same kind as `padded`.
  (padded as { set(source: typeof tensor.data, offset: number): void }).set(tensor.data, 0);
  return createTensor(tensor.name, tensor.datatype, shape, padded);
}
