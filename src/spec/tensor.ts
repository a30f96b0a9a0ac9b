/** KServe v2 / Triton tensor datatypes (KServe v2 required_api.md, tensor data types). */
export const DATATYPES = [
  'BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64',
  'FP16', 'FP32', 'FP64', 'BF16', 'BYTES',
] as const;
export type Datatype = (typeof DATATYPES)[number];

/**
 * Element storage per datatype. FP16 and BF16 keep their raw 16-bit patterns in a Uint16Array
 * (no JS float16 array on Node 20); BOOL is one byte per element; BYTES is one Uint8Array per element.
 */
export type TensorData =
  | Uint8Array | Uint16Array | Uint32Array | BigUint64Array
  | Int8Array | Int16Array | Int32Array | BigInt64Array
  | Float32Array | Float64Array
  | Uint8Array[];

export interface Tensor {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly data: TensorData;
}

/** What a model declares about one input or output; -1 in `shape` is a variable dimension. */
export interface TensorSpec {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly optional?: boolean;
}
