/** The same arithmetic as examples/quickstart's /prosody, for the bare-fastify baseline. */
export function prosody(text: string, speed = 1): { duration_ms: number; syllables: number; words: number } {
  const words = text.split(/\s+/).filter(Boolean);
  const syllables = words.reduce((n, w) => n + Math.max(1, (w.toLowerCase().match(/[aeiouy]+/g) ?? []).length), 0);
  return { duration_ms: Math.round((syllables * 200) / speed), syllables, words: words.length };
}
