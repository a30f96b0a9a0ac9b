/**
 * What a queue uses of an AbortSignal to drop a request whose caller has gone, so that a caller can
 * pass a cheaper watch (the HTTP routes' disconnectSignal) where building an AbortController per
 * request would be wasted.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}
