import type { InferenceSession } from 'onnxruntime-node';
import { ServeFnError, createError } from '../../errors/index.js';
import { fromOrtType } from '../../tensor/datatype-info.js';
import { fromOrtTensor, toOrtTensor, type OrtTensorConstructor } from '../../tensor/ort-codec.js';
import type { Tensor, TensorSpec } from '../../spec/tensor.js';
import type { BackendMetadata, BackendSession } from '../backend.js';

const BACKEND = 'onnxruntime';
/**
 * How ONNX Runtime's checks of the feeds against the model's declared inputs begin their messages
 * (InferenceSession::ValidateInputs, onnxruntime/core/session/inference_session.cc): the request's
 * tensors do not fit the model, a client error (400). A failure while the graph's kernels run
 * ("Non-zero status code returned while running ... node") may be the model's own fault or the
 * machine's, so it stays a server error.
 */
const INPUT_CHECK_FAILURES = ['Got invalid dimensions for input', 'Invalid rank for input', 'Unexpected input data type', 'Invalid input name', 'Missing Input'];

/** One ONNX Runtime inference session; `label` names the model in error messages. */
export class OnnxSession implements BackendSession {
  readonly backend = BACKEND;
  readonly #session: InferenceSession;
  readonly #OrtTensorClass: OrtTensorConstructor;
  readonly #label: string;
  readonly #metadata: BackendMetadata;
  #disposed = false;

  constructor(session: InferenceSession, OrtTensorClass: OrtTensorConstructor, label: string) {
    this.#session = session;
    this.#OrtTensorClass = OrtTensorClass;
    this.#label = label;
    this.#metadata = {
      inputs: session.inputMetadata.map((m) => toTensorSpec(m, label)),
      outputs: session.outputMetadata.map((m) => toTensorSpec(m, label)),
    };
  }

  metadata(): BackendMetadata {
    return this.#metadata;
  }

  async run(inputs: Readonly<Record<string, Tensor>>, outputNames?: readonly string[]): Promise<Record<string, Tensor>> {
    if (this.#disposed) throw createError('SF_ERR_BACKEND_RUN_FAILED', BACKEND, this.#label, 'the session has been disposed.');
    const feeds = Object.fromEntries(Object.entries(inputs).map(([name, tensor]) => [name, this.#toOrt(tensor)]));
    let results: InferenceSession.ReturnType;
    try {
      results = await this.#session.run(feeds, [...(outputNames ?? this.#session.outputNames)]);
    } catch (err) {
      const message = (err as Error).message;
      // A 400 is shown in production, so it does not name the model file, a path on the server.
      if (INPUT_CHECK_FAILURES.some((start) => message.startsWith(start))) throw createError('SF_ERR_BACKEND_INPUT_REJECTED', BACKEND, message, { cause: err });
      throw createError('SF_ERR_BACKEND_RUN_FAILED', BACKEND, this.#label, message, { cause: err });
    }
    const outputs: Record<string, Tensor> = {};
    for (const [name, value] of Object.entries(results)) outputs[name] = fromOrtTensor(name, value);
    return outputs;
  }

  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await this.#session.release();
  }

  #toOrt(tensor: Tensor) {
    try {
      return toOrtTensor(tensor, this.#OrtTensorClass);
    } catch (err) {
      // Our own conversion errors (BF16, bad UTF-8) already name the tensor; ORT's TypeErrors do not.
      if (err instanceof ServeFnError) throw err;
      throw createError('SF_ERR_BACKEND_RUN_FAILED', BACKEND, this.#label, `input '${tensor.name}': ${(err as Error).message}`);
    }
  }
}

function toTensorSpec(m: InferenceSession.ValueMetadata, label: string): TensorSpec {
  if (!m.isTensor) {
    throw createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, `'${m.name}' is not a tensor (a sequence, map or optional); serve-fn exchanges tensors only.`);
  }
  let datatype;
  try {
    datatype = fromOrtType(m.type, m.name);
  } catch (err) {
    throw createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, (err as Error).message);
  }
  // ONNX Runtime reports a symbolic dimension by its name (or '' when unnamed); Triton writes -1.
  return { name: m.name, datatype, shape: m.shape.map((d) => (typeof d === 'string' ? -1 : d)) };
}
