/** A boundary of a speech segment, in samples from the start of the utterance. */
export interface VadEvent {
  readonly kind: 'start' | 'end';
  readonly sample: number;
}

/**
 * Voice activity detection over a live stream. Events come in stream order, starts and ends
 * alternating; a start may point back in time (speech is only recognised after it began, and
 * padding is added before it), an end never lies past `processedSamples`.
 */
export interface StreamingVad {
  /** Samples classified so far; the rest wait for a whole window. */
  readonly processedSamples: number;
  push(samples: Float32Array): Promise<readonly VadEvent[]>;
  /** The stream has ended: classifies what is left and closes an open segment at the end. */
  finish(): Promise<readonly VadEvent[]>;
}
