/**
 * Writes small ONNX models (ModelProto) for tests and benchmarks, so they need no Python or model
 * files. The protobuf encoding is hand-written: the subset needed (varints, length-delimited
 * fields, fixed32 floats) is a few dozen lines, while a protobuf library would also need onnx.proto
 * compiled or loaded at run time.
 */
import { createError } from '../../errors/index.js';
import { tensorToBytes } from '../../tensor/binary-codec.js';
import { createTensor, type TensorValue } from '../../tensor/tensor-factory.js';
import type { Datatype, TensorData } from '../../spec/tensor.js';

export interface OnnxValueInfo {
  readonly name: string;
  readonly datatype: Datatype;
  /** A size, -1 for an unknown size, or a name for a symbolic dimension (e.g. 'batch'). */
  readonly shape: readonly (number | string)[];
}

export interface OnnxInitializer {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly data: TensorData | readonly TensorValue[];
}

/** ONNX attribute values, tagged because ONNX tells ints from floats (Cast's `to` vs LeakyRelu's `alpha`). */
export type OnnxAttribute =
  | { readonly int: number }
  | { readonly float: number }
  | { readonly string: string }
  | { readonly ints: readonly number[] }
  | { readonly floats: readonly number[] }
  | { readonly strings: readonly string[] }
  | { readonly tensor: Omit<OnnxInitializer, 'name'> };

export interface OnnxNode {
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly name?: string;
  readonly domain?: string;
  readonly attributes?: Readonly<Record<string, OnnxAttribute>>;
}

export interface OnnxModelSpec {
  readonly inputs: readonly OnnxValueInfo[];
  readonly outputs: readonly OnnxValueInfo[];
  readonly nodes: readonly OnnxNode[];
  readonly initializers?: readonly OnnxInitializer[];
  /** Default opset 17 with IR version 8 (ONNX 1.12), which every current ONNX Runtime loads. */
  readonly opset?: number;
  readonly irVersion?: number;
  readonly graphName?: string;
}

/** TensorProto.DataType numbers from onnx.proto. */
const ONNX_ELEMENT_TYPES: Readonly<Record<Datatype, number>> = {
  FP32: 1, UINT8: 2, INT8: 3, UINT16: 4, INT16: 5, INT32: 6, INT64: 7, BYTES: 8,
  BOOL: 9, FP16: 10, FP64: 11, UINT32: 12, UINT64: 13, BF16: 16,
};

/** AttributeProto.AttributeType numbers and the AttributeProto field each kind is stored in. */
const ATTRIBUTE_KINDS = {
  float: { type: 1, field: 2 }, int: { type: 2, field: 3 }, string: { type: 3, field: 4 }, tensor: { type: 4, field: 5 },
  floats: { type: 6, field: 7 }, ints: { type: 7, field: 8 }, strings: { type: 8, field: 9 },
} as const;

const utf8 = new TextEncoder();

/** The ONNX element type number of a datatype, e.g. for Cast's `to` attribute. */
export function onnxElementType(datatype: Datatype): number {
  return ONNX_ELEMENT_TYPES[datatype];
}

export function buildOnnxModel(spec: OnnxModelSpec): Uint8Array {
  const graph = new ProtoWriter();
  spec.nodes.forEach((node, i) => graph.message(1, nodeProto(node, i)));
  graph.string(2, spec.graphName ?? 'serve_fn_graph');
  for (const init of spec.initializers ?? []) graph.message(5, tensorProto(init.name, init));
  for (const input of spec.inputs) graph.message(11, valueInfoProto(input));
  for (const output of spec.outputs) graph.message(12, valueInfoProto(output));

  const opset = new ProtoWriter();
  opset.string(1, '');
  opset.varint(2, spec.opset ?? 17);

  const model = new ProtoWriter();
  model.varint(1, spec.irVersion ?? 8);
  model.string(2, 'serve-fn');
  model.message(7, graph);
  model.message(8, opset);
  return model.finish();
}

/** Triton's `simple` model: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, each [batch, size]. */
export function buildAddSubModel(options: { readonly datatype?: Datatype; readonly size?: number } = {}): Uint8Array {
  const datatype = options.datatype ?? 'INT32';
  const shape = ['batch', options.size ?? 16];
  const value = (name: string): OnnxValueInfo => ({ name, datatype, shape });
  return buildOnnxModel({
    inputs: [value('INPUT0'), value('INPUT1')],
    outputs: [value('OUTPUT0'), value('OUTPUT1')],
    nodes: [
      { op: 'Add', inputs: ['INPUT0', 'INPUT1'], outputs: ['OUTPUT0'] },
      { op: 'Sub', inputs: ['INPUT0', 'INPUT1'], outputs: ['OUTPUT1'] },
    ],
  });
}

/** OUTPUT0 = INPUT0, for any datatype ONNX Identity accepts. */
export function buildIdentityModel(datatype: Datatype, shape: readonly (number | string)[] = ['batch']): Uint8Array {
  return buildOnnxModel({
    inputs: [{ name: 'INPUT0', datatype, shape }],
    outputs: [{ name: 'OUTPUT0', datatype, shape }],
    nodes: [{ op: 'Identity', inputs: ['INPUT0'], outputs: ['OUTPUT0'] }],
  });
}

/** OUTPUT0 = Cast(INPUT0) from one datatype to another. */
export function buildCastModel(from: Datatype, to: Datatype, shape: readonly (number | string)[] = ['batch']): Uint8Array {
  return buildOnnxModel({
    inputs: [{ name: 'INPUT0', datatype: from, shape }],
    outputs: [{ name: 'OUTPUT0', datatype: to, shape }],
    nodes: [{ op: 'Cast', inputs: ['INPUT0'], outputs: ['OUTPUT0'], attributes: { to: { int: onnxElementType(to) } } }],
  });
}

function nodeProto(node: OnnxNode, index: number): ProtoWriter {
  const w = new ProtoWriter();
  for (const input of node.inputs) w.string(1, input);
  for (const output of node.outputs) w.string(2, output);
  w.string(3, node.name ?? `${node.op}_${index}`);
  w.string(4, node.op);
  for (const [name, value] of Object.entries(node.attributes ?? {})) w.message(5, attributeProto(name, value));
  if (node.domain !== undefined) w.string(7, node.domain);
  return w;
}

function attributeProto(name: string, value: OnnxAttribute): ProtoWriter {
  const w = new ProtoWriter();
  w.string(1, name);
  const kind = Object.keys(value)[0] as keyof typeof ATTRIBUTE_KINDS;
  const { type, field } = ATTRIBUTE_KINDS[kind];
  const v = value as Record<string, unknown>;
  if (kind === 'float') w.float(field, v.float as number);
  else if (kind === 'int') w.varint(field, v.int as number);
  else if (kind === 'string') w.string(field, v.string as string);
  else if (kind === 'tensor') w.message(field, tensorProto(name, v.tensor as OnnxInitializer));
  else if (kind === 'floats') for (const f of v.floats as number[]) w.float(field, f);
  else if (kind === 'ints') for (const n of v.ints as number[]) w.varint(field, n);
  else for (const s of v.strings as string[]) w.string(field, s);
  w.varint(20, type);
  return w;
}

function tensorProto(name: string, init: Omit<OnnxInitializer, 'name'>): ProtoWriter {
  const tensor = createTensor(name, init.datatype, init.shape, init.data);
  const w = new ProtoWriter();
  for (const dim of tensor.shape) w.varint(1, dim);
  w.varint(2, ONNX_ELEMENT_TYPES[tensor.datatype]);
  if (tensor.datatype === 'BYTES') for (const element of tensor.data as Uint8Array[]) w.bytes(6, element);
  w.string(8, name);
  if (tensor.datatype !== 'BYTES') w.bytes(9, tensorToBytes(tensor));
  return w;
}

function valueInfoProto(info: OnnxValueInfo): ProtoWriter {
  const shape = new ProtoWriter();
  for (const dim of info.shape) {
    const d = new ProtoWriter();
    if (typeof dim === 'string') d.string(2, dim);
    else if (Number.isSafeInteger(dim) && dim >= 0) d.varint(1, dim);
    else if (dim !== -1) throw createError('SF_ERR_TENSOR_DATA', info.name, `shape entries must be sizes >= 0, -1 or a symbolic name, got ${dim}.`);
    shape.message(1, d);
  }
  const tensorType = new ProtoWriter();
  tensorType.varint(1, ONNX_ELEMENT_TYPES[info.datatype]);
  tensorType.message(2, shape);
  const type = new ProtoWriter();
  type.message(1, tensorType);
  const w = new ProtoWriter();
  w.string(1, info.name);
  w.message(2, type);
  return w;
}

class ProtoWriter {
  readonly #parts: Uint8Array[] = [];

  varint(field: number, value: number | bigint): void {
    this.#key(field, 0);
    this.#rawVarint(value);
  }

  float(field: number, value: number): void {
    this.#key(field, 5);
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    this.#parts.push(bytes);
  }

  bytes(field: number, value: Uint8Array): void {
    this.#key(field, 2);
    this.#rawVarint(value.byteLength);
    this.#parts.push(value);
  }

  string(field: number, value: string): void {
    this.bytes(field, utf8.encode(value));
  }

  message(field: number, value: ProtoWriter): void {
    this.bytes(field, value.finish());
  }

  finish(): Uint8Array {
    return Buffer.concat(this.#parts);
  }

  #key(field: number, wireType: number): void {
    this.#rawVarint(field * 8 + wireType);
  }

  /** Negative int64 values are written as their 64-bit two's complement, as protobuf requires. */
  #rawVarint(value: number | bigint): void {
    let v = BigInt.asUintN(64, BigInt(value));
    const out: number[] = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    this.#parts.push(Uint8Array.from(out));
  }
}
