import type { ConfigTensor } from '../spec/config-tensor.js';
import type { Tensor } from '../spec/tensor.js';

/**
 * What crosses to and from a tensor model's instance thread: the plan it boots from, and each
 * request and result. Plain data only, since it goes through structured clone.
 */

export type TensorModelKind = 'onnx' | 'npu_om' | 'npu_ge' | 'module';

export interface TensorModelPlan {
  readonly kind: TensorModelKind;
  /** Absolute path of model.onnx (ONNX Runtime or GE), model.om, or the model.ts / model.js module. */
  readonly file: string;
  /** 0: requests carry no batch dimension and run one at a time. */
  readonly maxBatchSize: number;
  readonly inputs: readonly ConfigTensor[];
  readonly outputs: readonly ConfigTensor[];
  /** Backend options for `ctx.loadModel` (ONNX Runtime threads, memory arena; GE scopes and execution slots). */
  readonly sessionOptions: Readonly<Record<string, unknown>>;
}

export interface TensorWireRequest {
  readonly id?: string;
  readonly inputs: readonly Tensor[];
  /** The outputs this request wants; the main thread fills in every output when none were named. */
  readonly outputs: readonly string[];
  readonly parameters: Readonly<Record<string, unknown>>;
  /** Set for a request of a stateful model (sequence_batching): its correlation id and START / END flags. */
  readonly sequence?: SequenceFlags;
}

export interface SequenceFlags {
  readonly correlationId: number | string;
  readonly start: boolean;
  readonly end: boolean;
}

export interface TensorWireResult {
  readonly outputs: readonly Tensor[];
  readonly parameters?: Readonly<Record<string, unknown>>;
}

/** One response as it crosses from the instance's thread: checked outputs, and whether it is the last. */
export interface StreamedResult {
  readonly result: TensorWireResult;
  readonly final: boolean;
}

/** What a text model folder's instance boots from: its model file and the backend's session options. */
export interface TextForwardPlan {
  readonly kind: 'text-forward';
  /** Absolute path of the folder's model.onnx (or its _fp16 twin) or model.om. */
  readonly file: string;
  readonly sessionOptions: Readonly<Record<string, unknown>>;
}

/** What a text model's tokenizer instance boots from: the folder's tokenizer.json. */
export interface TokenizerPlan {
  readonly kind: 'tokenizer';
  /** Absolute path of tokenizer.json (tokenizer_config.json and special_tokens_map.json are read beside it). */
  readonly file: string;
}
