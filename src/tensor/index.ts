export { DATATYPES, type Datatype, type Tensor, type TensorData, type TensorSpec } from '../spec/tensor.js';
export {
  DATATYPE_INFO,
  fromConfigDatatype,
  fromOrtType,
  isBigIntDatatype,
  isDatatype,
  parseDatatype,
  toConfigDatatype,
  toOrtType,
  type ConfigDatatype,
  type DatatypeInfo,
  type NumericArrayConstructor,
  type OrtElementType,
} from './datatype-info.js';
export { bf16BitsToNumber, fp16BitsToNumber, numberToBf16Bits, numberToFp16Bits } from './half-float.js';
export {
  checkTensorAgainstSpec,
  createTensor,
  elementCount,
  formatShape,
  shapeMatches,
  validateShape,
  type TensorValue,
} from './tensor-factory.js';
export {
  decodeJsonTensor,
  decodeJsonTensorData,
  decodeTensorHeader,
  encodeJsonTensor,
  jsonTensorByteBound,
  stringifyJson,
  tensorToJsonValues,
  type JsonParameters,
  type JsonTensor,
  type JsonTensorHeader,
  type JsonTensorValue,
} from './json-codec.js';
export {
  INFERENCE_HEADER_CONTENT_LENGTH,
  buildInferResponseBody,
  decodeInferInputs,
  encodeBinaryOutput,
  splitInferBody,
  tensorFromBytes,
  tensorToBytes,
  type BinaryOutput,
  type InferBodyParts,
  type InferResponseBody,
} from './binary-codec.js';
export { fromOrtTensor, toOrtTensor, type OrtTensorConstructor } from './ort-codec.js';
