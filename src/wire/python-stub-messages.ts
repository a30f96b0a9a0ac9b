import type { Datatype } from '../spec/tensor.js';

/**
 * The one message set between serve-fn and a Python backend model's stub process
 * (src/instance/python/pb_stub.py), as python_backend keeps its own in ipc_message.h. Each message
 * is a frame: u32 header length, u32 payload length (little endian), the JSON header below, then
 * the payload's raw tensor bytes. A message whose tensors exceed STUB_SHM_THRESHOLD bytes carries
 * them in a shared-memory file instead (`shm`: its path, unlinked by the reader), so large tensors
 * never cross the pipe. Tensor data is never JSON. docs/model-repository.md#python-backend.
 */

/** Tensors up to this many bytes in all ride in the frame's payload; larger ones in shared memory. */
export const STUB_SHM_THRESHOLD = 64 * 1024;
/** Each tensor starts at a multiple of this, so numpy views over it are aligned. */
export const STUB_TENSOR_ALIGN = 64;

/** Where one tensor lies in its message's payload or shared-memory file. BYTES are Triton's length-prefixed elements. */
export interface StubTensorRef {
  readonly name: string;
  readonly datatype: Datatype;
  readonly shape: readonly number[];
  readonly offset: number;
  readonly size: number;
}

/** A TritonError as it crosses: its message (a Python traceback for an exception) and TritonError code. */
export interface StubError {
  readonly message: string;
  readonly code: number;
}

export interface StubRequest {
  readonly id?: string;
  readonly inputs: readonly StubTensorRef[];
  readonly outputs: readonly string[];
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly correlation_id?: number | string;
  readonly flags?: number;
}

/** One response: its outputs and parameters, or its TritonError. */
export type StubResponse =
  | { readonly outputs: readonly StubTensorRef[]; readonly parameters?: Readonly<Record<string, unknown>> }
  | { readonly error: StubError };

interface TensorCarrier {
  /** The shared-memory file holding this message's tensors; absent when they are in the payload. */
  readonly shm?: string;
}

export type ToStub =
  /** Imports model.py and runs `initialize(args)`; answered by ready or init-failed. */
  | { readonly type: 'init'; readonly file: string; readonly args: Readonly<Record<string, string>> }
  /** Runs `auto_complete_config` on the configuration (Triton's JSON); answered by auto-completed or init-failed, then the stub exits. */
  | { readonly type: 'auto-complete'; readonly file: string; readonly config: Readonly<Record<string, unknown>> }
  /** One `execute(requests)`: one batch, or a decoupled model's one request. */
  | ({ readonly type: 'execute'; readonly id: number; readonly model: string; readonly requests: readonly StubRequest[] } & TensorCarrier)
  /** The client went away: `is_cancelled()` answers True for the call's requests from now on. */
  | { readonly type: 'cancel'; readonly id: number }
  /** A BLS call's response (one; a decoupled call streams several, the last `final`). */
  | ({ readonly type: 'bls-response'; readonly id: number; readonly final: boolean; readonly response?: StubResponse | null; readonly error?: StubError } & TensorCarrier)
  | { readonly type: 'finalize' };

export type FromStub =
  | { readonly type: 'ready' }
  | { readonly type: 'init-failed'; readonly error: StubError }
  | { readonly type: 'auto-completed'; readonly config: Record<string, unknown> }
  /** A non-decoupled execute's responses, one per request. */
  | ({ readonly type: 'responses'; readonly id: number; readonly responses: readonly StubResponse[] } & TensorCarrier)
  /** execute raised (or returned the wrong number of responses): every request of the call fails. */
  | { readonly type: 'failed'; readonly id: number; readonly error: StubError }
  /** A decoupled execute returned; its responses come through the response sender. */
  | { readonly type: 'executed'; readonly id: number }
  /** One response of a decoupled request through its response sender; `final` is COMPLETE_FINAL. */
  | ({ readonly type: 'response'; readonly id: number; readonly index: number; readonly final: boolean; readonly response: StubResponse | null } & TensorCarrier)
  /** BLS: `InferenceRequest(...).exec()` on a served model. */
  | ({
      readonly type: 'bls'; readonly id: number; readonly model: string; readonly version: string; readonly decoupled: boolean;
      readonly inputs: readonly StubTensorRef[]; readonly outputs: readonly string[]; readonly parameters: Readonly<Record<string, unknown>>;
      readonly request_id: string; readonly timeout: number;
    } & TensorCarrier)
  | { readonly type: 'log'; readonly level: 'info' | 'warn' | 'error' | 'debug'; readonly message: string }
  | { readonly type: 'metric-family'; readonly name: string; readonly description: string; readonly kind: 'counter' | 'gauge' | 'histogram' }
  | { readonly type: 'metric'; readonly family: string; readonly labels: Readonly<Record<string, string>>; readonly op: 'create' | 'increment' | 'set' | 'observe'; readonly value: number; readonly buckets?: readonly number[] }
  | { readonly type: 'finalized'; readonly error?: StubError };
