import { status as GrpcStatus } from '@grpc/grpc-js';
import { exposesMessage, GENERIC_SERVER_ERROR, isServerFault, statusOf } from '../../errors/index.js';

/**
 * Every HTTP status serve-fn answers with, as the gRPC code of the same kind. serve-fn errors carry
 * the HTTP status (Triton's protocol/README.md maps Triton's error kinds to both), so the code is
 * read back from it here and nowhere else. Where Triton has a gRPC answer it is Triton's
 * (grpc_utils.cc): NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE, UNIMPLEMENTED (its UNSUPPORTED),
 * INTERNAL, CANCELLED; the rest follow grpc's statuscodes.md.
 */
export const GRPC_CODE_BY_HTTP_STATUS: Readonly<Record<number, GrpcStatus>> = {
  400: GrpcStatus.INVALID_ARGUMENT,
  401: GrpcStatus.UNAUTHENTICATED,
  // Triton answers a call to a restricted protocol without its header UNAVAILABLE, not
  // PERMISSION_DENIED (its src/grpc handlers: "This protocol is restricted, expecting header ...").
  403: GrpcStatus.UNAVAILABLE,
  404: GrpcStatus.NOT_FOUND,
  405: GrpcStatus.UNIMPLEMENTED,
  408: GrpcStatus.DEADLINE_EXCEEDED,
  // grpc-js's own answer to a message over the size limit.
  413: GrpcStatus.RESOURCE_EXHAUSTED,
  415: GrpcStatus.INVALID_ARGUMENT,
  422: GrpcStatus.INVALID_ARGUMENT,
  // TEI's 424 is a backend that failed its forward pass: the server's fault, not the request's.
  424: GrpcStatus.INTERNAL,
  426: GrpcStatus.FAILED_PRECONDITION,
  // An overloaded model or a rate limit is Triton's queue-full case (UNAVAILABLE, "Exceeds maximum
  // queue size"), and UNAVAILABLE is the code gRPC's retry policies and Triton's clients retry.
  429: GrpcStatus.UNAVAILABLE,
  499: GrpcStatus.CANCELLED,
  500: GrpcStatus.INTERNAL,
  501: GrpcStatus.UNIMPLEMENTED,
  503: GrpcStatus.UNAVAILABLE,
  504: GrpcStatus.DEADLINE_EXCEEDED,
};

export interface GrpcErrorAnswer {
  readonly code: GrpcStatus;
  readonly details: string;
  /** A server fault, which the caller logs whole: its details are generic unless errors are exposed. */
  readonly fault: boolean;
}

/**
 * An error as a gRPC status. A server fault's details are `Internal Server Error` unless
 * `exposeErrors` (`serve-fn dev`), the rule HTTP answers by (errors/server-fault.ts).
 */
export function toGrpcError(err: unknown, options: { readonly exposeErrors: boolean }): GrpcErrorAnswer {
  const status = statusOf(err);
  const code = GRPC_CODE_BY_HTTP_STATUS[status] ?? (status < 500 ? GrpcStatus.INVALID_ARGUMENT : GrpcStatus.INTERNAL);
  const message = (err as Error)?.message ?? String(err);
  return { code, details: exposesMessage(err, options.exposeErrors) ? message : GENERIC_SERVER_ERROR, fault: isServerFault(err) };
}
