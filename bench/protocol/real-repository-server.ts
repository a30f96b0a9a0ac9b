import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAddSubModel, buildIdentityModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';

/**
 * bench/protocol/run.ts's server when BENCH_SERVER=repository: ServeFnServer over a Triton
 * repository folder, so the figures include the runtime (worker-thread instance, ONNX Runtime).
 * `simple` is Triton's config with onnx-model-builder's add/sub graph; `identity_fp32` takes the
 * 4 MiB round trip unbatched.
 */
const httpPort = Number(process.env.HTTP_PORT ?? 8000);
const grpcPort = Number(process.env.GRPC_PORT ?? 8001);

const root = mkdtempSync(join(tmpdir(), 'serve-fn-bench-repository-'));
const simpleConfig = readFileSync(fileURLToPath(new URL('../../test/fixtures/protocol-repository/simple/config.pbtxt', import.meta.url)), 'utf8');
const files: Record<string, string | Uint8Array> = {
  'simple/config.pbtxt': simpleConfig,
  'simple/1/model.onnx': buildAddSubModel({ size: 16 }),
  'identity_fp32/config.pbtxt': `name: "identity_fp32"
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`,
  'identity_fp32/1/model.onnx': buildIdentityModel('FP32', ['n']),
};
for (const [path, content] of Object.entries(files)) {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), content);
}

const server = new ServeFnServer({
  models: [],
  repository: { root },
  grpc: { port: grpcPort, host: '127.0.0.1' },
  // Above the 64 MiB default: the 64 MiB round trip's binary body is the tensor plus its JSON header.
  bodyLimit: 65 * 1024 * 1024,
  collectProcessMetrics: false,
});
await server.listen(httpPort, '127.0.0.1');

process.once('SIGTERM', () => {
  void server.close().then(() => {
    rmSync(root, { recursive: true, force: true });
    process.exit(0);
  });
});
