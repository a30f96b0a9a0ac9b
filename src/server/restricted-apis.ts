import { BlockList, isIP } from 'node:net';
import { createError, type ServeFnError } from '../errors/index.js';
import { sharedSecretMatcher } from './shared-secret.js';

/**
 * Triton's restricted API groups (`--http-restricted-api`, `--grpc-restricted-protocol`; Triton's
 * customization guide, "Limit Endpoint Access") that serve-fn serves. `logging` has no HTTP
 * route here and only an UNIMPLEMENTED RPC, but is accepted so a Triton
 * command line carries over. Triton's `health`, `metadata` and `inference` are not: the API key
 * (SERVE_FN_API_KEY) guards those.
 */
export const API_GROUPS = ['shared-memory', 'model-repository', 'model-config', 'statistics', 'trace', 'logging'] as const;
export type ApiGroup = (typeof API_GROUPS)[number];

/**
 * The groups answered only to clients on the server's own host while no restriction names them:
 * registering shared memory reads and writes any /dev/shm object the server's user can open, and
 * repository control loads model files. `serve-fn start` binds 0.0.0.0, so Triton's "open until
 * restricted" would hand both to the network.
 */
const LOOPBACK_ONLY_GROUPS: readonly ApiGroup[] = ['shared-memory', 'model-repository'];

/** One `<apis>:<key>=<value>` setting: the groups, and the header (lower case) that must carry the value. */
export interface ApiRestriction {
  readonly groups: readonly ApiGroup[];
  readonly header: string;
  readonly value: string;
}

/** What a caller presents: its TCP peer, and every value of a header (HTTP) or metadata key (gRPC). */
export interface ApiCaller {
  readonly remoteAddress: string | undefined;
  values(header: string): readonly string[];
}

/** How each transport names itself and its setting in a refusal, as Triton's refusals do. */
export interface RestrictionTransport {
  /** `API` (HTTP) or `protocol` (gRPC), Triton's words. */
  readonly noun: string;
  /** The flag that restricts a group on this transport. */
  readonly flag: string;
  /** Prepended to a restriction's key to form the header checked: `triton-grpc-protocol-` on gRPC, as Triton. */
  readonly headerPrefix: string;
}

export const HTTP_RESTRICTION: RestrictionTransport = { noun: 'API', flag: '--http-restricted-api', headerPrefix: '' };
export const GRPC_RESTRICTION: RestrictionTransport = { noun: 'protocol', flag: '--grpc-restricted-protocol', headerPrefix: 'triton-grpc-protocol-' };

/** RFC 9110's token, which a header name must be. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A value that travels as one header token: printable ASCII without spaces, as the API key. */
const HEADER_VALUE = /^[\x21-\x7e]+$/;

/**
 * Reads Triton's `<api>,<api>...:<key>=<value>`; throws an Error naming what is wrong (the value,
 * a secret, is never echoed). Hand-written: the syntax is Triton's own, with no parser outside it.
 */
export function parseApiRestriction(text: string): ApiRestriction {
  const colon = text.indexOf(':');
  const equals = colon < 0 ? -1 : text.indexOf('=', colon);
  if (colon < 0 || equals < 0) throw new Error(`expected '<api>,<api>...:<header>=<value>', such as 'shared-memory,model-repository:admin-key=<secret>'.`);
  const names = text.slice(0, colon).split(',').map((g) => g.trim());
  const header = text.slice(colon + 1, equals).trim().toLowerCase();
  const value = text.slice(equals + 1);
  const groups = names.map((name) => {
    if ((API_GROUPS as readonly string[]).includes(name)) return name as ApiGroup;
    throw new Error(`unknown API '${name}': use ${API_GROUPS.join(', ')}.`);
  });
  if (!HEADER_NAME.test(header)) throw new Error(`'${header}' is not a header name: use letters, digits and - (an HTTP token).`);
  if (!HEADER_VALUE.test(value)) throw new Error(`the value of header '${header}' must be printable ASCII without spaces (it is sent as a header).`);
  return { groups, header, value };
}

/** Adds `next` to `restrictions`; a group may be in one setting only, as in Triton. */
export function addApiRestriction(restrictions: readonly ApiRestriction[], next: ApiRestriction): ApiRestriction[] {
  for (const group of next.groups) {
    if (restrictions.some((r) => r.groups.includes(group)) || next.groups.indexOf(group) !== next.groups.lastIndexOf(group)) {
      throw new Error(`API '${group}' can not be specified in multiple config groups.`);
    }
  }
  return [...restrictions, next];
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** 127.0.0.0/8 and ::1, the IPv4 ones also as IPv4-mapped IPv6 (BlockList matches those). */
/**
 * The header in which `serve-fn dev`, which forwards every request from 127.0.0.1, names the client it
 * forwards for. It is believed only from a loopback peer (dev itself, or another process on this
 * machine, already trusted as loopback), and dev overwrites any value a client sent.
 */
export const DEV_CLIENT_HEADER = 'x-serve-fn-dev-client';

/** The caller's address: its TCP peer, or the client a loopback forwarder (serve-fn dev) names. */
export function callerAddress(peer: string | undefined, named: string | string[] | undefined): string | undefined {
  return isLoopback(peer) && typeof named === 'string' ? named : peer;
}

export function isLoopback(address: string | undefined): boolean {
  const family = address === undefined ? 0 : isIP(address);
  return family !== 0 && LOOPBACK.check(address!, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * The one decision, for HTTP routes and gRPC methods alike, whether a caller may use an API group:
 * a group a restriction names needs its header with the value (from every client, loopback too,
 * as Triton); a group in {@link LOOPBACK_ONLY_GROUPS} that none names is answered to loopback
 * clients only; any other group is open. Returns the refusal, or undefined when allowed.
 */
export function apiAccess(restrictions: readonly ApiRestriction[], transport: RestrictionTransport): (group: ApiGroup, caller: ApiCaller) => ServeFnError | undefined {
  const byGroup = new Map<ApiGroup, { header: string; matches: (value: string) => boolean }>();
  for (const { groups, header, value } of restrictions) {
    const check = { header: `${transport.headerPrefix}${header}`, matches: sharedSecretMatcher(value) };
    for (const group of groups) byGroup.set(group, check);
  }
  return (group, caller) => {
    const restriction = byGroup.get(group);
    if (restriction) {
      if (caller.values(restriction.header).some(restriction.matches)) return undefined;
      return createError('SF_ERR_API_RESTRICTED', transport.noun, restriction.header);
    }
    if (!LOOPBACK_ONLY_GROUPS.includes(group) || isLoopback(caller.remoteAddress)) return undefined;
    return createError('SF_ERR_API_LOCAL_ONLY', transport.noun, transport.flag, group);
  };
}
