/**
 * serve-fn Tensor ↔ onnxruntime-node Tensor. Only types come from onnxruntime-node here, so
 * importing this file does not load the native binding: callers pass the runtime's Tensor class.
 */
import type { Tensor as OrtTensor } from 'onnxruntime-node';
import { createError } from '../errors/index.js';
import { fromOrtType, toOrtType } from './datatype-info.js';
import { createTensor } from './tensor-factory.js';
import type { Tensor, TensorData } from '../spec/tensor.js';

export type OrtTensorConstructor = typeof import('onnxruntime-node').Tensor;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const utf8 = new TextEncoder();

/** Numeric data is handed to ONNX Runtime as the same typed array; BYTES become ORT's string[]. */
export function toOrtTensor(tensor: Tensor, OrtTensorClass: OrtTensorConstructor): OrtTensor {
  const type = toOrtType(tensor.datatype, tensor.name);
  if (type !== 'string') {
    return new OrtTensorClass(type, tensor.data as Exclude<TensorData, Uint8Array[]>, tensor.shape);
  }
  const strings = (tensor.data as Uint8Array[]).map((bytes, i) => {
    try {
      return strictUtf8.decode(bytes);
    } catch {
      throw createError('SF_ERR_TENSOR_DATA', tensor.name, `element ${i} is not valid UTF-8, and ONNX Runtime string tensors hold text only.`);
    }
  });
  return new OrtTensorClass('string', strings, tensor.shape);
}

export function fromOrtTensor(name: string, ortTensor: OrtTensor): Tensor {
  const datatype = fromOrtType(ortTensor.type, name);
  const shape = ortTensor.dims;
  const data = ortTensor.data;
  if (datatype === 'BYTES') return createTensor(name, datatype, shape, (data as string[]).map((s) => utf8.encode(s)));
  if (datatype === 'FP16' && !(data instanceof Uint16Array)) {
    // Where the JS engine has Float16Array (Node 24+), ORT returns one; serve-fn keeps raw FP16 bits.
    const view = data as ArrayBufferView & { length: number };
    return createTensor(name, datatype, shape, new Uint16Array(view.buffer, view.byteOffset, view.length));
  }
  return createTensor(name, datatype, shape, data as Exclude<TensorData, Uint8Array[]>);
}
