import { writeFileSync } from 'node:fs';

/**
 * Writes model files in the simulated AscendCL's test-only format (test/native/sim/README.md).
 * It encodes whatever it is given, without checking op rules, so tests can also write models the
 * simulation must reject.
 */

export type SimOp = 'add' | 'mul' | 'relu' | 'matmul';

const OP_CODES: Readonly<Record<SimOp, number>> = { add: 1, mul: 2, relu: 3, matmul: 4 };

/** aclDataType codes (CANN AscendCL API reference, aclDataType) of the two types the simulation computes with. */
export const SIM_DATA_TYPES = { FP32: 0, INT32: 3 } as const;

export interface SimTensorDecl {
  readonly name: string;
  readonly datatype: keyof typeof SIM_DATA_TYPES;
  /** -1 in dim 0 marks the batch dimension of a model with batch gears. */
  readonly dims: readonly number[];
}

export interface SimModelSpec {
  readonly op: SimOp;
  readonly inputs: readonly SimTensorDecl[];
  readonly outputs: readonly SimTensorDecl[];
  readonly batchGears?: readonly number[];
  /** matmul only: the K×N weight matrix, row-major. */
  readonly weights?: readonly number[];
}

const MAGIC = 'SFSIMOM1';
const FORMAT_VERSION = 1;
const HEADER_BYTES = 32;
const NAME_BYTES = 64;

function tensorBytes(t: SimTensorDecl): number {
  return NAME_BYTES + 8 + 8 * t.dims.length;
}

export function encodeSimModel(spec: SimModelSpec): Uint8Array {
  const gears = spec.batchGears ?? [];
  const weights = spec.weights ?? [];
  const tensors = [...spec.inputs, ...spec.outputs];
  const size = HEADER_BYTES + 8 * gears.length + tensors.reduce((n, t) => n + tensorBytes(t), 0) + 4 * weights.length;
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  const encoder = new TextEncoder();
  bytes.set(encoder.encode(MAGIC), 0);
  [FORMAT_VERSION, OP_CODES[spec.op], spec.inputs.length, spec.outputs.length, gears.length, weights.length].forEach((value, i) =>
    view.setUint32(8 + 4 * i, value, true),
  );
  let offset = HEADER_BYTES;
  for (const gear of gears) {
    view.setBigUint64(offset, BigInt(gear), true);
    offset += 8;
  }
  for (const tensor of tensors) {
    const name = encoder.encode(tensor.name);
    if (name.length >= NAME_BYTES) throw new RangeError(`tensor name '${tensor.name}' must be shorter than ${NAME_BYTES} bytes`);
    bytes.set(name, offset);
    view.setInt32(offset + NAME_BYTES, SIM_DATA_TYPES[tensor.datatype], true);
    view.setUint32(offset + NAME_BYTES + 4, tensor.dims.length, true);
    tensor.dims.forEach((dim, i) => view.setBigInt64(offset + NAME_BYTES + 8 + 8 * i, BigInt(dim), true));
    offset += tensorBytes(tensor);
  }
  for (const weight of weights) {
    view.setFloat32(offset, weight, true);
    offset += 4;
  }
  return bytes;
}

/** Writes the encoded model to `file` and returns the path. */
export function writeSimModel(file: string, spec: SimModelSpec): string {
  writeFileSync(file, encodeSimModel(spec));
  return file;
}
