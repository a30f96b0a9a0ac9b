import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { PythonStubInstance } from '../../src/engine/python-stub-instance.js';
import { silentLogger } from '../../src/instance/instance-logger.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import { tensorCall } from '../../src/wire/wire-format.js';
import { load, startServer, stopServer } from '../lib/load.js';

/**
 * The Python backend against the same models as model.ts and (add_sub) ONNX Runtime, in one
 * `serve-fn start` of one repository: requests/s at 32 clients, one client's mean latency (the
 * difference to model.ts is the process crossing), and a 64 MiB FP32 tensor's round trip through
 * an identity model.py and model.ts. `npm run bench:python-backend`; needs `npm run build` and a
 * python3 with numpy.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REPO = join(ROOT, 'test', '.tmp', `bench-python-backend-${process.pid}`);
const PORT = 18600 + (process.pid % 200);
const BASE = `http://127.0.0.1:${PORT}`;
const DURATION_S = Number(process.env.DURATION_S ?? 10);

const addSubConfig = (name: string, backend: string): string => `name: "${name}"
${backend}
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] } ]
dynamic_batching { max_queue_delay_microseconds: 2000 }
`;
const identityConfig = (name: string, backend: string): string => `name: "${name}"
backend: "${backend}"
max_batch_size: 0
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;
const files: Record<string, string | Uint8Array> = {
  'py_add_sub/config.pbtxt': addSubConfig('py_add_sub', 'backend: "python"'),
  'py_add_sub/1/model.py': `import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            a = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(r, "INPUT1").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]))
        return out
`,
  'ts_add_sub/config.pbtxt': addSubConfig('ts_add_sub', 'backend: "serve-fn"'),
  'ts_add_sub/1/model.ts': `export default class AddSub {
  execute(requests: any[]) {
    return requests.map((r) => {
      const a = r.input('INPUT0'), b = r.input('INPUT1');
      const sum = Int32Array.from(a.data, (v: number, i: number) => v + b.data[i]);
      const diff = Int32Array.from(a.data, (v: number, i: number) => v - b.data[i]);
      return { outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: a.shape, data: sum }, { name: 'OUTPUT1', datatype: 'INT32', shape: a.shape, data: diff }] };
    });
  }
}
`,
  'ort_add_sub/config.pbtxt': addSubConfig('ort_add_sub', 'platform: "onnxruntime_onnx"'),
  'ort_add_sub/1/model.onnx': buildAddSubModel({ datatype: 'INT32', size: 16 }),
  'py_identity/config.pbtxt': identityConfig('py_identity', 'python'),
  'py_identity/1/model.py': `import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy())]) for r in requests]
`,
  'ts_identity/config.pbtxt': identityConfig('ts_identity', 'serve-fn'),
  'ts_identity/1/model.ts': `export default class Identity {
  execute(requests: any[]) {
    return requests.map((r) => ({ outputs: [{ ...r.input('IN'), name: 'OUT' }] }));
  }
}
`,
};

rmSync(REPO, { recursive: true, force: true });
for (const [path, content] of Object.entries(files)) {
  mkdirSync(join(REPO, path, '..'), { recursive: true });
  writeFileSync(join(REPO, path), content);
}

const addSubBody = JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});

/** Mean µs of one client's requests, one after another. */
async function sequentialUs(model: string, calls: number): Promise<number> {
  const post = (): Promise<Response> => fetch(`${BASE}/v2/models/${model}/infer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: addSubBody });
  for (let i = 0; i < 50; i++) await (await post()).arrayBuffer();
  const start = performance.now();
  for (let i = 0; i < calls; i++) await (await post()).arrayBuffer();
  return ((performance.now() - start) * 1000) / calls;
}

/**
 * The process crossing alone: one add_sub execute through a stub process and back (frame out,
 * numpy, frame back), measured on PythonStubInstance directly, without HTTP or queueing.
 */
async function stubRoundTripUs(calls: number): Promise<number> {
  const stub = new PythonStubInstance(0, {
    file: join(REPO, 'py_add_sub/1/model.py'),
    launch: { interpreter: 'python3', env: {}, cwd: join(REPO, 'py_add_sub'), logger: silentLogger(), logFields: {} },
    outputs: [{ name: 'OUTPUT0', datatype: 'INT32', dims: [16], optional: false }, { name: 'OUTPUT1', datatype: 'INT32', dims: [16], optional: false }],
  }, { modelName: 'py_add_sub', modelVersion: '1', instanceName: 'bench', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: join(REPO, 'py_add_sub'), config: {} }, { onCrash: () => undefined }, {
    infer: () => Promise.reject(new Error('no BLS here')), inferStream: () => Promise.reject(new Error('no BLS here')), metric: () => undefined,
  });
  await stub.start();
  const input = (name: string) => createTensor(name, 'INT32', [1, 16], new Int32Array(16).fill(2));
  const call = tensorCall([{ inputs: [input('INPUT0'), input('INPUT1')], outputs: ['OUTPUT0', 'OUTPUT1'], parameters: {} }]);
  try {
    for (let i = 0; i < 200; i++) await stub.execute(call);
    const start = performance.now();
    for (let i = 0; i < calls; i++) await stub.execute(call);
    return ((performance.now() - start) * 1000) / calls;
  } finally {
    await stub.stop();
  }
}

/** MiB/s of a 64 MiB FP32 tensor sent in binary and answered in binary, `calls` times. */
async function bigTensorMiBps(model: string, calls: number): Promise<number> {
  const elements = (64 * 1024 * 1024) / 4;
  const data = new Float32Array(elements).map((_, i) => i % 1000);
  const header = Buffer.from(JSON.stringify({
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [elements], parameters: { binary_data_size: data.byteLength } }],
    outputs: [{ name: 'OUT', parameters: { binary_data: true } }],
  }));
  const body = Buffer.concat([header, Buffer.from(data.buffer)]);
  const once = async (): Promise<void> => {
    const res = await fetch(`${BASE}/v2/models/${model}/infer`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) }, body });
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (res.status !== 200 || bytes.byteLength < data.byteLength) throw new Error(`${model}: ${res.status} ${Buffer.from(bytes.subarray(0, 300)).toString()}`);
  };
  await once();
  const start = performance.now();
  for (let i = 0; i < calls; i++) await once();
  return (64 * calls) / ((performance.now() - start) / 1000);
}

const server = await startServer([join(ROOT, 'bin/serve-fn.js'), 'start', REPO, '--host', '127.0.0.1', '--port', String(PORT), '--grpc-port', '0', '--body-limit', String(200 * 1024 * 1024)], `${BASE}/v2/health/ready`, { SERVE_FN_LOG_LEVEL: 'warn' });
try {
  console.log(`| add_sub (INT32 [1,16], JSON) | req/s, 32 clients (${DURATION_S} s) | p50 ms | 1 client, µs per request |`);
  console.log('|---|---|---|---|');
  const latency: Record<string, number> = {};
  for (const [label, model] of [['Python backend (model.py)', 'py_add_sub'], ['model.ts (worker thread)', 'ts_add_sub'], ['ONNX Runtime (model.onnx)', 'ort_add_sub']] as const) {
    const loaded = await load(`${BASE}/v2/models/${model}/infer`, { connections: 32, durationS: DURATION_S, body: addSubBody });
    if (loaded.non2xx + loaded.errors > 0) throw new Error(`${model}: ${loaded.non2xx} non-2xx answers, ${loaded.errors} errors`);
    latency[model] = await sequentialUs(model, 500);
    console.log(`| ${label} | ${loaded.rps.toFixed(0)} | ${loaded.p50Ms} | ${latency[model].toFixed(0)} |`);
  }
  console.log(`\nOne client, Python backend − model.ts: ${(latency.py_add_sub - latency.ts_add_sub).toFixed(0)} µs per request`);
  console.log(`The process crossing alone (add_sub execute on a stub and back, no HTTP): ${(await stubRoundTripUs(3000)).toFixed(0)} µs per call\n`);
  const py = await bigTensorMiBps('py_identity', 5);
  const ts = await bigTensorMiBps('ts_identity', 5);
  console.log('| 64 MiB FP32 tensor round trip (binary HTTP) | MiB/s |');
  console.log('|---|---|');
  console.log(`| Python backend identity (shared memory) | ${py.toFixed(0)} |`);
  console.log(`| model.ts identity (worker thread) | ${ts.toFixed(0)} |`);
  console.log(`\nPython backend / model.ts: ${(py / ts).toFixed(2)}× (issue 26 asks ≥ 0.5×)`);
} finally {
  await stopServer(server);
  rmSync(REPO, { recursive: true, force: true });
}
