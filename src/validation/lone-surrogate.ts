/**
 * Where a string holds a lone UTF-16 surrogate: a high one not followed by a low one, or a low one
 * not preceded by a high one. JSON.parse lets `"\ud800"` through (RFC 8259 §8.2 leaves such strings'
 * meaning open), but UTF-8 cannot encode one: TextEncoder and Buffer silently write U+FFFD instead,
 * so a model would see a text the client never sent. (String.prototype.isWellFormed says whether,
 * not where, and is beyond the ES2023 library this project compiles against.)
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The index of the first lone surrogate, or -1 when the string is well-formed Unicode. */
export function loneSurrogateAt(text: string): number {
  return LONE_SURROGATE.exec(text)?.index ?? -1;
}
