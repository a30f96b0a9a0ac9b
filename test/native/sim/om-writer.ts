import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { buildSimulatedAcl } from '../build-sim.js';

/**
 * Writes model files in the simulated AscendCL's test-only format (test/native/sim/README.md):
 * version 1 for the ops add, mul, relu and matmul, encoded here without checking op rules, so
 * tests can also write models the simulation must reject; version 2 for op onnx (an ONNX graph),
 * encoded by the simulation's own C encoder (sim_om_encode_onnx, the one the simulated GE compiler
 * writes with) through sim-onnx.node, so that format has one writer.
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

/** An OM around an ONNX graph (format version 2, op 5), as the simulated GE compiler writes one. */
export interface SimOnnxModelSpec {
  readonly op: 'onnx';
  readonly onnx: Uint8Array;
  /** Batch gears of dim 0; the graph's inputs and outputs must then have a symbolic dim 0. */
  readonly batchGears?: readonly number[];
  /** Rounds float32 inputs and outputs to binary16 (the ONNX runner's fp16_compute). */
  readonly fp16Compute?: boolean;
}

const MAGIC = 'SFSIMOM1';
const FORMAT_VERSION = 1;
const HEADER_BYTES = 32;
const NAME_BYTES = 64;

interface SimOnnxAddon {
  encodeOm(libraryFile: string, onnx: Uint8Array, gears: readonly number[], fp16Compute: boolean): Uint8Array;
}

function encodeOnnxModel(spec: SimOnnxModelSpec): Uint8Array {
  const sim = buildSimulatedAcl();
  const addon = createRequire(import.meta.url)(sim.onnxAddon) as SimOnnxAddon;
  return new Uint8Array(addon.encodeOm(sim.fullLibrary, spec.onnx, spec.batchGears ?? [], spec.fp16Compute ?? false));
}

function tensorBytes(t: SimTensorDecl): number {
  return NAME_BYTES + 8 + 8 * t.dims.length;
}

export function encodeSimModel(spec: SimModelSpec | SimOnnxModelSpec): Uint8Array {
  if (spec.op === 'onnx') return encodeOnnxModel(spec);
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
export function writeSimModel(file: string, spec: SimModelSpec | SimOnnxModelSpec): string {
  writeFileSync(file, encodeSimModel(spec));
  return file;
}
