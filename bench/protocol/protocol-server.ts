import Fastify from 'fastify';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { startGrpcServer } from '../../src/protocol/grpc/grpc-server.js';
import { kserveProtocol } from '../../src/protocol/kserve-protocol.js';
import { installErrorHandling } from '../../src/server/error-handler.js';
import { FakeRepository, identityModel, simpleModel } from '../../test/protocol/fake-repository.js';

/**
 * The server side of bench/protocol/run.ts, in its own process: a fastify app shaped like
 * ServeFnServer's (serve-fn's error handling at the root, the protocol plugin under /v2) and the
 * gRPC server, over the test suite's in-process `simple` and `identity_fp32` models, so the figures
 * measure the protocol layer rather than a runtime or a backend.
 */
const httpPort = Number(process.env.HTTP_PORT ?? 8000);
const grpcPort = Number(process.env.GRPC_PORT ?? 8001);
const recorder = new InferenceRecorder({ collectProcessMetrics: false });
const repository = new FakeRepository([simpleModel(recorder), identityModel('FP32')]);
const options = { repository, recorder, serverName: 'serve-fn', serverVersion: 'bench', ready: () => true };
// Above the 64 MiB default: the 64 MiB round trip's binary body is the tensor plus its JSON header.
const bodyLimit = 65 * 1024 * 1024;

const app = Fastify({ logger: false });
installErrorHandling(app, { bodyLimit, exposeErrors: false });
await app.register(kserveProtocol, { ...options, bodyLimit });
await app.listen({ port: httpPort, host: '127.0.0.1' });
const grpc = await startGrpcServer({ ...options, port: grpcPort, host: '127.0.0.1' });

process.once('SIGTERM', () => {
  void Promise.all([app.close(), grpc.close(1_000)]).then(() => process.exit(0));
});
