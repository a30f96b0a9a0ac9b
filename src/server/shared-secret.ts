import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The one comparison of a presented secret (an API key, a restricted API's header value) with the
 * configured one, in constant time: true when `presented` equals `secret`.
 */
export function sharedSecretMatcher(secret: string): (presented: string) => boolean {
  const expected = digest(secret);
  return (presented) => timingSafeEqual(digest(presented), expected);
}

/** Equal-length digests let timingSafeEqual compare secrets of any length without leaking it. */
function digest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}
