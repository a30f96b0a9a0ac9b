import type { Datatype, TensorSpec } from './tensor.js';

/** One input or output as config.pbtxt declares it, with the batch dimension left out. */
export interface ConfigTensor {
  readonly name: string;
  readonly datatype: Datatype;
  readonly dims: readonly number[];
  /** The shape the model file itself takes or gives (Triton's `reshape`), batch dimension left out. */
  readonly reshape?: readonly number[];
  readonly optional: boolean;
  /** A @Tensors input that takes zero-sized dimensions (TensorDeclaration.allowEmpty). */
  readonly allowEmpty?: boolean;
}

/** What clients see of a tensor: its dims, batch dimension left out (InferenceModelInfo's convention). */
export function toTensorSpec(tensor: ConfigTensor): TensorSpec {
  return tensor.optional
    ? { name: tensor.name, datatype: tensor.datatype, shape: tensor.dims, optional: true }
    : { name: tensor.name, datatype: tensor.datatype, shape: tensor.dims };
}
