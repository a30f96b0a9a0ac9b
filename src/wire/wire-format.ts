import * as workerThreads from 'node:worker_threads';
import type { RequestInfo, SocketContext } from '../definition/model-context.js';
import type { SerializedError } from '../errors/index.js';
import type { TensorWireRequest } from './tensor-model-plan.js';
import type { PoolingModeName } from '../metadata/records.js';
import type { DecoderStepCall } from './decoder-step-call.js';
import type { EncodeOptions } from '../tokenizer/tokenizer.js';

/** What crosses between the HTTP thread and an instance, in both directions. */

/** A request's facts as they cross to the instance, which adds the logger (withRequestLogger). */
export type WireRequestInfo = Omit<RequestInfo, 'logger'>;

export interface WireRequest {
  /** The validated DTO as a plain object (structured clone drops class prototypes). */
  readonly payload: unknown;
  readonly info: WireRequestInfo;
}

export type WireResult = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: SerializedError };

/** Calls an @Endpoint method with validated DTOs, one list when the endpoint has @Batch. */
export interface EndpointCall {
  readonly kind: 'endpoint';
  readonly methodName: string;
  readonly batched: boolean;
  readonly requests: readonly WireRequest[];
  readonly traceparents?: CallTraces;
}

/**
 * One execution of a tensor interface (a repository model, or a decorated class's `execute`):
 * validated KServe v2 requests, all handed over in one call as Triton's Python backend does.
 */
export interface TensorCall {
  readonly kind: 'tensor';
  readonly requests: readonly TensorWireRequest[];
  readonly traceparents?: CallTraces;
}

/**
 * Per request of a call, the W3C `traceparent` of its `compute` span when it is traced: the instance
 * runs the request with it (context-services.ts), so ctx.infer calls it makes are children of it.
 */
export type CallTraces = readonly (string | undefined)[];


/** What one sequence of a text forward batch asks for: its pooled embedding, each token's, its logits (classification, reranking) or SPLADE. */
export type ForwardWant = 'pooled' | 'tokens' | 'logits' | 'sparse';

/** One sequence's answer: a vector, a vector per real token, or SPLADE's non-zero entries. */
export type ForwardRow = Float32Array | Float32Array[] | SparseValue[];

export interface SparseValue {
  readonly index: number;
  readonly value: number;
}

/** One sequence of a text forward batch, as the tokenizer made it. */
export interface ForwardSequence {
  readonly ids: Uint32Array;
  readonly typeIds: Uint32Array;
  readonly want: ForwardWant;
}

/**
 * One forward batch of a text model: token ids go to the instance, which pads, runs the forward
 * pass and pools (TEI's split: the queue in its router, padding and pooling in its backend), and
 * one ForwardRow per sequence comes back.
 */
export interface TextForwardCall {
  readonly kind: 'text-forward';
  readonly sequences: readonly ForwardSequence[];
  readonly pooling: PoolingModeName;
  readonly padId: number;
}

/** One text (or pair) for a tokenizer instance, with the encode's options. */
export interface TokenizeText {
  readonly first: string;
  readonly second?: string;
  readonly options: EncodeOptions;
}

/**
 * Texts for a text model's tokenizer instance (instance/tokenizer-host.ts), which encodes them off
 * the HTTP thread as TEI's tokenization workers do; one TextEncoding (or its error) each comes back.
 */
export interface TokenizeCall {
  readonly kind: 'tokenize';
  readonly texts: readonly TokenizeText[];
}

export type ExecuteCall = EndpointCall | TensorCall | TextForwardCall | DecoderStepCall | TokenizeCall;

/**
 * The calls an instance can run as a stream, holding the instance until the stream ends (a decorated
 * streamed endpoint, a decoupled repository model's request): one request each, traced by its
 * traceparents. A text forward batch never streams.
 */
export type StreamCall = EndpointCall | TensorCall;

export function tensorCall(requests: readonly TensorWireRequest[], traceparents?: CallTraces): TensorCall {
  return traceparents ? { kind: 'tensor', requests, traceparents } : { kind: 'tensor', requests };
}

/** Whether the instance answers a call's requests one by one (an unbatched endpoint) rather than all at once. */
export function answersOneByOne(call: ExecuteCall): boolean {
  return call.kind === 'endpoint' && !call.batched;
}

/** Opens a WebSocket connection's session on an instance. */
export interface SocketCall {
  readonly methodName: string;
  readonly context: Omit<SocketContext, 'logger'>;
  /** The session span's W3C `traceparent` when traced: the session's ctx.infer calls hang under it. */
  readonly traceparent?: string;
}

/** One message from a WebSocket client: validated JSON (a plain DTO), a string, or bytes. */
export type SocketInput =
  | { readonly kind: 'json'; readonly value: unknown }
  | { readonly kind: 'text'; readonly value: string }
  | { readonly kind: 'binary'; readonly value: Uint8Array }
  /** Where a message the HTTP thread refused stood: the method never sees it (socket-session.ts). */
  | { readonly kind: 'refused' };

export interface ExecuteOutcome {
  readonly results: readonly WireResult[];
  /**
   * When the model method started and ended, in ms since the epoch (`timeOrigin + now()`, which
   * is comparable across threads), so the caller can split a call into input, infer and output time.
   */
  readonly computeStartMs: number;
  readonly computeEndMs: number;
  /**
   * When the instance took the call up, in the same clock: a batch queued on a busy instance (see
   * InstancePool) waits until the one before it has ended, and that wait is queue time.
   */
  readonly takenMs?: number;
}

/**
 * Hears one request of an unbatched call the moment it ends: `outcome` holds its one result and its
 * own compute times, so it is answered then rather than when the call's last request ends.
 */
export type OnResult = (index: number, outcome: ExecuteOutcome) => void;

/**
 * The buffers of a call's requests. An endpoint request's `info` holds the URL's params and query and
 * the headers, all strings, so only its payload is walked: the same depth as walking the call's list.
 */
export function callTransferables(call: ExecuteCall): ArrayBuffer[] {
  // A forward batch's token ids are a few KB, and the tokenizer's arrays are not the call's to detach.
  // A decoder step's token ids and grammar masks are a few KB too; texts to tokenize are strings.
  if (call.kind === 'text-forward' || call.kind === 'decoder-step' || call.kind === 'tokenize') return [];
  if (call.kind !== 'endpoint') return collectTransferables(call.requests);
  const out: ArrayBuffer[] = [];
  for (const request of call.requests) collectTransferables(request.payload, out, 2);
  return out;
}

/**
 * Whether Node refuses to transfer `buffer`: native addons' external buffers (the NPU addon's outputs)
 * are marked so, since their memory must be freed on the thread that made them. Node 21+ throws when
 * one is in a transfer list, and tells which are (`isMarkedAsUntransferable`); Node 20 cannot tell, and
 * copies them instead of throwing, so there every buffer may be listed.
 */
const untransferable: (buffer: ArrayBuffer) => boolean =
  (workerThreads as { isMarkedAsUntransferable?: (value: object) => boolean }).isMarkedAsUntransferable ?? (() => false);

/**
 * Buffers to hand over instead of copying. A buffer is only transferable when the view covers it
 * whole: Node's pooled small Buffers share one ArrayBuffer, and transferring it would detach others.
 * Buffers Node marks untransferable are left out, so they are copied.
 */
export function collectTransferables(value: unknown, out: ArrayBuffer[] = [], depth = 0): ArrayBuffer[] {
  if (depth > 8 || value === null || typeof value !== 'object') return out;
  if (ArrayBuffer.isView(value)) {
    const buffer = value.buffer;
    if (buffer instanceof ArrayBuffer && value.byteOffset === 0 && value.byteLength === buffer.byteLength && !out.includes(buffer) && !untransferable(buffer)) {
      out.push(buffer);
    }
    return out;
  }
  const children: unknown[] = Array.isArray(value) ? value : Object.values(value);
  // Tensors as JSON are long arrays of numbers: skip them without a call per element.
  for (const child of children) if (child !== null && typeof child === 'object') collectTransferables(child, out, depth + 1);
  return out;
}

/**
 * Structured clone turns Buffers into plain Uint8Arrays. Models and handlers expect Buffers (and
 * class-transformer empties plain Uint8Arrays), so received values get Buffer views, without copying.
 */
export function reviveBuffers<T>(value: T, depth = 0): T {
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength) as T;
  }
  if (depth > 8 || value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (item !== null && typeof item === 'object') value[i] = reviveBuffers(item, depth + 1);
    }
    return value;
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) record[key] = reviveBuffers(record[key], depth + 1);
  return value;
}
