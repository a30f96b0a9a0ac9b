import { createError } from '../../errors/index.js';
import type { BackendMetadata } from '../backend.js';
import { DATATYPE_INFO, type NumericArrayConstructor } from '../../tensor/datatype-info.js';
import { elementCount } from '../../tensor/tensor-factory.js';
import type { Datatype, Tensor, TensorData, TensorSpec } from '../../spec/tensor.js';
import type { NativeModelDescription, NativeTensorDescription } from './native-binding.js';

/** aclDataType codes (CANN AscendCL API reference, aclDataType) that have a serve-fn datatype. */
const ACL_TO_DATATYPE: Readonly<Record<number, Datatype>> = {
  0: 'FP32', 1: 'FP16', 2: 'INT8', 3: 'INT32', 4: 'UINT8', 6: 'INT16', 7: 'UINT16',
  8: 'UINT32', 9: 'INT64', 10: 'UINT64', 11: 'FP64', 12: 'BOOL', 27: 'BF16',
};

/** Storage per datatype as tensor.ts defines it (FP16/BF16 as raw 16-bit patterns, BOOL as bytes). */
function storage(datatype: Exclude<Datatype, 'BYTES'>): NumericArrayConstructor {
  return DATATYPE_INFO[datatype].arrayType!;
}

const DATATYPE_TO_ACL = new Map(Object.entries(ACL_TO_DATATYPE).map(([code, datatype]) => [datatype, Number(code)]));

function datatypeOfAcl(aclDataType: number): Datatype | undefined {
  return ACL_TO_DATATYPE[aclDataType];
}

/** The aclDataType (and ge::DataType, which uses the same numbers) of a serve-fn datatype; undefined for BYTES. */
export function aclDataTypeOf(datatype: Datatype): number | undefined {
  return DATATYPE_TO_ACL.get(datatype);
}

function toSpec(tensor: NativeTensorDescription): TensorSpec | string {
  const datatype = datatypeOfAcl(tensor.dataType);
  if (!datatype) return `tensor '${tensor.name}' has aclDataType ${tensor.dataType}, which serve-fn has no datatype for`;
  return { name: tensor.name, datatype, shape: [...tensor.dims] };
}

/** The backend metadata of a native description, or the reason it cannot be served. */
export function toBackendMetadata(description: NativeModelDescription): BackendMetadata | string {
  const inputs = description.inputs.map(toSpec);
  const outputs = description.outputs.map(toSpec);
  const problem = [...inputs, ...outputs].find((spec): spec is string => typeof spec === 'string');
  if (problem) return problem;
  return {
    inputs: inputs as TensorSpec[],
    outputs: outputs as TensorSpec[],
    ...(description.batchGears.length > 0 ? { batchSizes: [...description.batchGears] } : {}),
  };
}

/** The bytes of a tensor's data, or undefined when its storage does not match the datatype. */
export function tensorBytes(datatype: Datatype, data: TensorData): Uint8Array | undefined {
  if (datatype === 'BYTES' || Array.isArray(data) || !(data instanceof storage(datatype))) return undefined;
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

function storageName(datatype: Datatype): string {
  return datatype === 'BYTES' ? 'an array of Uint8Array' : `a ${storage(datatype).name}`;
}

/** Output bytes from the addon as the typed array tensor.ts expects for `datatype`. */
export function tensorData(datatype: Exclude<Datatype, 'BYTES'>, bytes: ArrayBuffer): TensorData {
  return new (storage(datatype))(bytes);
}

/*
 * The request checks both NPU sessions (OM and GE) make against a model's metadata before any
 * native call, so callers get the SF_ERR_* error of the request's fault.
 */

/** The outputs to return: those named (each must exist), else all of them. */
export function selectOutputs(metadata: BackendMetadata, outputNames: readonly string[] | undefined, label: string): Set<string> {
  const known = new Set(metadata.outputs.map((spec) => spec.name));
  for (const name of outputNames ?? []) {
    if (!known.has(name)) throw createError('SF_ERR_OUTPUT_UNKNOWN', name, label);
  }
  return outputNames ? new Set(outputNames) : known;
}

/** Refuses a tensor that is none of the model's inputs. */
export function refuseUnexpectedInputs(metadata: BackendMetadata, inputs: Readonly<Record<string, Tensor>>, label: string): void {
  for (const name of Object.keys(inputs)) {
    if (!metadata.inputs.some((spec) => spec.name === name)) throw createError('SF_ERR_TENSOR_UNEXPECTED', name, label);
  }
}

/** The request's tensor for `spec`; its absence is SF_ERR_TENSOR_MISSING. */
export function inputFor(spec: TensorSpec, inputs: Readonly<Record<string, Tensor>>, label: string): Tensor {
  const tensor = inputs[spec.name];
  if (!tensor) throw createError('SF_ERR_TENSOR_MISSING', spec.name, label);
  return tensor;
}

/**
 * The bytes of a request tensor whose datatype and shape already fit `spec`; refuses data not held
 * in the datatype's typed array, or holding other than the shape's element count. `format` writes
 * the shape in the refusal as the session's other errors write shapes.
 */
export function inputBytes(spec: TensorSpec, tensor: Tensor, format: (shape: readonly number[]) => string): Uint8Array {
  const bytes = tensorBytes(spec.datatype, tensor.data);
  if (!bytes) throw createError('SF_ERR_TENSOR_DATA', spec.name, `${spec.datatype} data must be ${storageName(spec.datatype)}`);
  const elements = elementCount(tensor.shape);
  if (tensor.data.length !== elements) {
    throw createError('SF_ERR_TENSOR_DATA', spec.name, `holds ${tensor.data.length} elements, shape ${format(tensor.shape)} needs ${elements}`);
  }
  return bytes;
}
