import { fileURLToPath } from 'node:url';
import { loadPackageDefinition, Server, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import { DEFAULT_PROTOCOL_BODY_LIMIT, protocolExtensions } from '../kserve-protocol.js';
import { SystemSharedMemoryRegistry } from '../system-shared-memory/registry.js';
import type { TlsFiles } from '../../server/security-plugin.js';
import { grpcInferenceService, type GrpcServiceOptions } from './grpc-inference-service.js';
import { grpcTracingInterceptor } from '../../tracing/grpc-tracing.js';
import type { RequestTracing } from '../../tracing/request-tracing.js';
import { grpcAuthInterceptors, grpcRestrictionInterceptor, grpcServerCredentials, type GrpcSecurityOptions } from './grpc-security.js';

/**
 * The extensions served over gRPC: HTTP's but `binary_tensor_data`, an HTTP/REST extension
 * (Triton's protocol/extension_binary_data.md) whose gRPC counterpart, `raw_input_contents`, is
 * part of the core protocol.
 */
function grpcExtensions(sharedMemory: SystemSharedMemoryRegistry): readonly string[] {
  return protocolExtensions(sharedMemory).filter((e) => e !== 'binary_tensor_data');
}

/** Triton's gRPC port (Triton's customization guide, "Inference Protocols and APIs"). */
export const DEFAULT_GRPC_PORT = 8001;

/** Triton's grpc_service.proto (it imports model_config.proto) beside this module; the build copies every .proto next to the compiled file. */
export const GRPC_PROTO_PATH = fileURLToPath(new URL('./grpc_service.proto', import.meta.url));

/**
 * How proto-loader maps messages to JS: snake_case names as in the .proto (what Triton clients
 * send), 64-bit integers as decimal strings so none lose precision, the set oneof field named.
 */
export const GRPC_PROTO_OPTIONS: Options = { keepCase: true, longs: String, enums: String, defaults: false, arrays: true, objects: true, oneofs: true };

export interface GrpcServerOptions extends Omit<GrpcServiceOptions, 'extensions' | 'sharedMemory'> {
  readonly extensions?: readonly string[];
  /** HTTP's system shared-memory regions; a registry of its own by default, emptied on close. */
  readonly sharedMemory?: SystemSharedMemoryRegistry;
  /** OpenTelemetry tracing, when on: a span per call. */
  readonly tracing?: RequestTracing;
  /** 8001 by default; 0 picks a free port. */
  readonly port?: number;
  /** 0.0.0.0 by default. */
  readonly host?: string;
  /** Largest request message in bytes; 64 MiB by default, as for HTTP bodies (grpc-js would allow 4 MiB). */
  readonly maxMessageBytes?: number;
  /** The API key (and whether health needs it too) that HTTP enforces, and the restricted API groups; no key check when absent. */
  readonly security?: GrpcSecurityOptions;
  /** The HTTP side's certificate and key; plaintext when absent. */
  readonly tls?: TlsFiles;
}

export interface GrpcServerHandle {
  /** The port bound, useful with port 0. */
  readonly port: number;
  /** Stops accepting calls, lets running ones finish for up to `graceMs`, then cancels the rest. */
  close(graceMs?: number): Promise<void>;
}

/** The `inference.GRPCInferenceService` constructor from grpc_service.proto. */
export function loadInferenceService(): ServiceClientConstructor {
  const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, GRPC_PROTO_OPTIONS));
  return (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
}

/** Serves the KServe v2 gRPC protocol over `repository` on its own port. */
export async function startGrpcServer(opts: GrpcServerOptions): Promise<GrpcServerHandle> {
  const maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_PROTOCOL_BODY_LIMIT;
  const server = new Server({
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': -1,
    interceptors: [
      ...(opts.tracing ? [grpcTracingInterceptor(opts.tracing)] : []),
      ...grpcAuthInterceptors(opts.security ?? {}),
      grpcRestrictionInterceptor(opts.security?.restrictedApis?.grpc ?? []),
    ],
  });
  const sharedMemory = opts.sharedMemory ?? new SystemSharedMemoryRegistry();
  server.addService(loadInferenceService().service, grpcInferenceService({ ...opts, sharedMemory, extensions: opts.extensions ?? grpcExtensions(sharedMemory) }));
  const address = `${opts.host ?? '0.0.0.0'}:${opts.port ?? DEFAULT_GRPC_PORT}`;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, grpcServerCredentials(opts.tls), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return {
    port,
    close: (graceMs = 5_000) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.forceShutdown(), graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          if (!opts.sharedMemory) sharedMemory.unregister();
          resolve();
        });
      }),
  };
}
