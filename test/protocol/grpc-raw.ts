import { Metadata, type CallOptions, type Client, type ServiceError, type status } from '@grpc/grpc-js';

/**
 * Raw gRPC calls for the conformance tests: messages go over the wire as the bytes the test wrote
 * with protobuf-wire.ts and come back as bytes the test parses itself, so nothing trusts the .proto
 * the server loads.
 */

/** Pass-through serializer: the bytes are the message. */
export const same = (b: Buffer): Buffer => b;

/** The path of a method of Triton's GRPCInferenceService. */
export const inferenceMethod = (method: string): string => `/inference.GRPCInferenceService/${method}`;

/** One unary GRPCInferenceService call with hand-encoded request bytes; resolves the raw response bytes. */
export function call(client: Client, method: string, body: Buffer = Buffer.alloc(0), md: Metadata = new Metadata(), options: CallOptions = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(inferenceMethod(method), same, same, body, md, options, (err: ServiceError | null, res?: Buffer) => (err ? reject(err) : resolve(res!)));
  });
}

/** The status code and details a call failed with. */
export async function failure(promise: Promise<unknown>): Promise<[status, string]> {
  const err = (await promise.then(() => undefined, (e: ServiceError) => e)) as ServiceError | undefined;
  if (!err) throw new Error('the call succeeded');
  return [err.code, err.details];
}

/** Opens a bidirectional stream, writes every message, ends the client side, and resolves every message received until the server ends. */
export function exchange(client: Client, path: string, messages: readonly Buffer[], md: Metadata = new Metadata()): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const stream = client.makeBidiStreamRequest(path, same, same, md);
    const received: Buffer[] = [];
    stream.on('data', (message: Buffer) => received.push(message));
    stream.on('error', reject);
    stream.on('end', () => resolve(received));
    for (const message of messages) stream.write(message);
    stream.end();
  });
}
