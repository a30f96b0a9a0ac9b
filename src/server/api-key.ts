import { sharedSecretMatcher } from './shared-secret.js';

/** What a request carries that may hold the API key: HTTP headers or gRPC metadata, every value given. */
export interface PresentedCredentials {
  /** `authorization` values; only `Bearer <key>` ones count. */
  readonly authorization: readonly string[];
  /** `x-api-key` values. */
  readonly apiKey: readonly string[];
}

/**
 * The one API-key check HTTP and gRPC share: true when any presented key equals `apiKey`, each
 * compared in constant time.
 */
export function apiKeyVerifier(apiKey: string): (presented: PresentedCredentials) => boolean {
  const matches = sharedSecretMatcher(apiKey);
  return ({ authorization, apiKey: headers }) => {
    const keys = [...authorization.map(bearerToken).filter((k): k is string => k !== undefined), ...headers];
    return keys.some(matches);
  };
}

function bearerToken(authorization: string): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
}
