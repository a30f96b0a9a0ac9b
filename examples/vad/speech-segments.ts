/** get_speech_timestamps settings, with Silero's defaults. */
export interface SegmentOptions {
  /** Speech starts when a window's probability reaches this. */
  readonly threshold: number;
  /** Speech ends only below this (hysteresis); Silero uses threshold - 0.15. */
  readonly negThreshold: number;
  /** Shorter speech is dropped. */
  readonly minSpeechMs: number;
  /** Silence must last this long to end a segment. */
  readonly minSilenceMs: number;
  /** Added on both sides of each segment (halved between segments closer than twice this). */
  readonly speechPadMs: number;
}

export const DEFAULT_SEGMENT_OPTIONS: SegmentOptions = { threshold: 0.5, negThreshold: 0.35, minSpeechMs: 250, minSilenceMs: 100, speechPadMs: 30 };

/** A speech segment in samples, end exclusive. */
export interface SampleSegment {
  start: number;
  end: number;
}

/**
 * Silero's get_speech_timestamps (v5, without max_speech_duration_s) on per-window probabilities:
 * a segment opens at the first window at or above the threshold, closes where the probability has
 * stayed under the lower threshold for the minimum silence, and is kept if it is long enough;
 * then segments are padded, splitting the gap when neighbours are close.
 */
export function speechSegments(probabilities: ArrayLike<number>, windowSamples: number, totalSamples: number, sampleRate: number, options: SegmentOptions): SampleSegment[] {
  const minSpeech = (sampleRate * options.minSpeechMs) / 1000;
  const minSilence = (sampleRate * options.minSilenceMs) / 1000;
  const pad = (sampleRate * options.speechPadMs) / 1000;
  const segments: SampleSegment[] = [];
  let start: number | undefined;
  let silenceFrom = 0;
  for (let i = 0; i < probabilities.length; i++) {
    const p = probabilities[i];
    const at = windowSamples * i;
    if (p >= options.threshold && silenceFrom) silenceFrom = 0;
    if (p >= options.threshold && start === undefined) {
      start = at;
      continue;
    }
    if (p < options.negThreshold && start !== undefined) {
      if (!silenceFrom) silenceFrom = at;
      if (at - silenceFrom < minSilence) continue;
      if (silenceFrom - start > minSpeech) segments.push({ start, end: silenceFrom });
      start = undefined;
      silenceFrom = 0;
    }
  }
  if (start !== undefined && totalSamples - start > minSpeech) segments.push({ start, end: totalSamples });
  padSegments(segments, pad, totalSamples);
  return segments;
}

function padSegments(segments: SampleSegment[], pad: number, totalSamples: number): void {
  segments.forEach((segment, i) => {
    if (i === 0) segment.start = Math.trunc(Math.max(0, segment.start - pad));
    const next = segments[i + 1];
    if (!next) {
      segment.end = Math.trunc(Math.min(totalSamples, segment.end + pad));
      return;
    }
    const gap = next.start - segment.end;
    if (gap < 2 * pad) {
      segment.end += Math.floor(gap / 2);
      next.start = Math.trunc(Math.max(0, next.start - Math.floor(gap / 2)));
    } else {
      segment.end = Math.trunc(Math.min(totalSamples, segment.end + pad));
      next.start = Math.trunc(Math.max(0, next.start - pad));
    }
  });
}
