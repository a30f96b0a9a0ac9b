/** A stretch of the transcript with its times in seconds. */
export interface TimedText {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** SubRip (`00:00:01,500 --> 00:00:03,000`), as OpenAI's response_format=srt. */
export function toSrt(segments: readonly TimedText[]): string {
  return segments.map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${s.text}\n`).join('\n');
}

/** WebVTT, as OpenAI's response_format=vtt. */
export function toVtt(segments: readonly TimedText[]): string {
  return `WEBVTT\n\n${segments.map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${s.text}\n`).join('\n')}`;
}

function clock(seconds: number, separator: string): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}
