import type { SerializedError } from '../errors/index.js';

/** What a stream's producer (in the instance's thread) tells its consumer (on the HTTP thread). */
export type StreamEvent =
  | { readonly kind: 'chunk'; readonly value: unknown }
  /** The producer stopped: the iterable ended, or it was cancelled and its `return()` has run. */
  | { readonly kind: 'end' }
  | { readonly kind: 'error'; readonly error: SerializedError };

/** The consumer's requests to the producer. */
export interface StreamControl {
  grant(units: number): void;
  cancel(): void;
}
