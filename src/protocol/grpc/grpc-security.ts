import {
  ResponderBuilder,
  ServerCredentials,
  ServerInterceptingCall,
  ServerListenerBuilder,
  status as GrpcStatus,
  type Metadata,
  type ServerInterceptor,
} from '@grpc/grpc-js';
import { createError } from '../../errors/index.js';
import { apiKeyVerifier } from '../../server/api-key.js';
import { apiAccess, GRPC_RESTRICTION, type ApiGroup, type ApiRestriction } from '../../server/restricted-apis.js';
import type { SecurityOptions, TlsFiles } from '../../server/security-plugin.js';
import { toGrpcError } from './grpc-errors.js';

/** The gRPC counterparts of the HTTP health routes: open unless `protectHealth`, as on HTTP. */
export const GRPC_HEALTH_METHODS: readonly string[] = ['ServerLive', 'ServerReady', 'ModelReady'].map((m) => `/inference.GRPCInferenceService/${m}`);

export type GrpcSecurityOptions = Pick<SecurityOptions, 'apiKey' | 'protectHealth' | 'restrictedApis'>;

/** The RPCs of each restricted API group (restricted-apis.ts), as Triton's grpc_server.cc groups them. */
const GROUP_METHODS: Readonly<Record<ApiGroup, readonly string[]>> = {
  'shared-memory': ['SystemSharedMemoryStatus', 'SystemSharedMemoryRegister', 'SystemSharedMemoryUnregister', 'CudaSharedMemoryStatus', 'CudaSharedMemoryRegister', 'CudaSharedMemoryUnregister'],
  'model-repository': ['RepositoryIndex', 'RepositoryModelLoad', 'RepositoryModelUnload'],
  'model-config': ['ModelConfig'],
  statistics: ['ModelStatistics'],
  trace: ['TraceSetting'],
  logging: ['LogSettings'],
};

export const GRPC_METHOD_GROUPS: ReadonlyMap<string, ApiGroup> = new Map(
  Object.entries(GROUP_METHODS).flatMap(([group, methods]) => methods.map((m) => [`/inference.GRPCInferenceService/${m}`, group as ApiGroup] as const)),
);

/**
 * The server-level API-key check, so every method (unary and streaming alike) is covered without
 * each handler having to remember it: the call's metadata must hold `authorization: Bearer <key>`
 * or `x-api-key: <key>`, else the call ends UNAUTHENTICATED before any handler runs. No
 * interceptor when no key is set.
 */
export function grpcAuthInterceptors(options: GrpcSecurityOptions): ServerInterceptor[] {
  if (options.apiKey === undefined) return [];
  const verify = apiKeyVerifier(options.apiKey);
  const open = new Set(options.protectHealth ? [] : GRPC_HEALTH_METHODS);
  const details = createError('SF_ERR_UNAUTHORIZED').message;
  const interceptor: ServerInterceptor = (method, call) => {
    if (open.has(method.path)) return new ServerInterceptingCall(call);
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        if (verify({ authorization: textValues(metadata, 'authorization'), apiKey: textValues(metadata, 'x-api-key') })) next(metadata);
        else call.sendStatus({ code: GrpcStatus.UNAUTHENTICATED, details });
      })
      .build();
    return new ServerInterceptingCall(call, new ResponderBuilder().withStart((next) => next(listener)).build());
  };
  return [interceptor];
}

/**
 * The restricted API groups over gRPC, decided where HTTP's are (restricted-apis.ts) from the
 * call's metadata and TCP peer: a refused call ends before its handler runs, with Triton's
 * UNAVAILABLE "This protocol is restricted, expecting header 'triton-grpc-protocol-<key>'".
 */
export function grpcRestrictionInterceptor(restrictions: readonly ApiRestriction[]): ServerInterceptor {
  const refusal = apiAccess(restrictions, GRPC_RESTRICTION);
  return (method, call) => {
    const group = GRPC_METHOD_GROUPS.get(method.path);
    if (group === undefined) return new ServerInterceptingCall(call);
    const listener = new ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        const refused = refusal(group, { remoteAddress: call.getConnectionInfo().remoteAddress, values: (key) => textValues(metadata, key) });
        if (refused === undefined) next(metadata);
        else call.sendStatus({ code: toGrpcError(refused, { exposeErrors: false }).code, details: refused.message });
      })
      .build();
    return new ServerInterceptingCall(call, new ResponderBuilder().withStart((next) => next(listener)).build());
  };
}

/** TLS with the HTTP side's certificate and key when given (no client certificates asked), plaintext otherwise. */
export function grpcServerCredentials(tls: TlsFiles | undefined): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(null, [{ cert_chain: tls.cert, private_key: tls.key }], false);
}

function textValues(metadata: Metadata, key: string): string[] {
  return metadata.get(key).filter((v): v is string => typeof v === 'string');
}
