import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { statusOf } from '../../errors/index.js';

/**
 * Triton's error kinds as gRPC codes (grpc_utils.cc): NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE,
 * UNIMPLEMENTED (its UNSUPPORTED), INTERNAL, CANCELLED. serve-fn errors carry the HTTP status of
 * the same kind (Triton's docs/protocol/README.md), so the code is read back from it.
 */
const CODE_BY_HTTP_STATUS: Readonly<Record<number, GrpcStatus>> = {
  400: GrpcStatus.INVALID_ARGUMENT,
  404: GrpcStatus.NOT_FOUND,
  405: GrpcStatus.UNIMPLEMENTED,
  413: GrpcStatus.RESOURCE_EXHAUSTED,
  499: GrpcStatus.CANCELLED,
  500: GrpcStatus.INTERNAL,
  501: GrpcStatus.UNIMPLEMENTED,
  503: GrpcStatus.UNAVAILABLE,
};

export function toGrpcError(err: unknown): Partial<ServiceError> & { code: GrpcStatus; details: string } {
  const status = statusOf(err);
  const code = CODE_BY_HTTP_STATUS[status] ?? (status < 500 ? GrpcStatus.INVALID_ARGUMENT : GrpcStatus.INTERNAL);
  return { code, details: (err as Error)?.message ?? String(err) };
}
