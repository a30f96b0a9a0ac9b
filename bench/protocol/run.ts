import { closeSync, ftruncateSync, openSync, rmSync } from 'node:fs';
import { credentials, type Client, type ServiceError } from '@grpc/grpc-js';
import autocannon from 'autocannon';
import { loadNpuBinding } from '../../src/backends/npu/native-binding.js';
import { loadInferenceService } from '../../src/protocol/grpc/grpc-server.js';
import { median, startServer, stopServer } from '../lib/load.js';

/**
 * The KServe v2 protocol layer, measured against bench/protocol/protocol-server.ts in a second
 * process: a 4 MiB FP32 tensor round trip as JSON and as binary tensor data, a 64 MiB one as
 * binary tensor data and through system shared memory, then `simple` infer requests per second at
 * 32 concurrent clients over HTTP (JSON and binary) and gRPC.
 */
const HTTP_PORT = 18000;
const GRPC_PORT = 18001;
const base = `http://127.0.0.1:${HTTP_PORT}`;
const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = 32;

// BENCH_SERVER=repository measures a real repository (runtime and ONNX Runtime included) instead of in-process fakes.
const serverScript = process.env.BENCH_SERVER === 'repository' ? 'bench/protocol/real-repository-server.ts' : 'bench/protocol/protocol-server.ts';
const server = await startServer(['--import', './loader/register.mjs', serverScript], `${base}/v2/health/ready`, {
  HTTP_PORT: String(HTTP_PORT),
  GRPC_PORT: String(GRPC_PORT),
});

try {
  console.log(`node ${process.version}, ${durationS} s per load run, ${CONNECTIONS} concurrent clients\n`);
  await tensorRoundTrip();
  await sharedMemoryRoundTrip();
  await requestsPerSecond();
} finally {
  await stopServer(server);
}

async function tensorRoundTrip(): Promise<void> {
  const count = (4 * 1024 * 1024) / 4;
  const values = Float32Array.from({ length: count }, (_, i) => ((i * 7919) % 1000) / 7);
  const url = `${base}/v2/models/identity_fp32/infer`;

  const jsonBody = `{"inputs":[{"name":"INPUT0","shape":[${count}],"datatype":"FP32","data":[${Array.from(values).join(',')}]}]}`;
  const viaJson = async (): Promise<Float32Array> => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: jsonBody });
    const parsed = JSON.parse(await res.text()) as { outputs: { data: number[] }[] };
    return Float32Array.from(parsed.outputs[0].data);
  };

  const header = Buffer.from(
    `{"inputs":[{"name":"INPUT0","shape":[${count}],"datatype":"FP32","parameters":{"binary_data_size":${count * 4}}}],"parameters":{"binary_data_output":true}}`,
  );
  const binaryBody = Buffer.concat([header, Buffer.from(values.buffer)]);
  const viaBinary = async (): Promise<Float32Array> => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
      body: binaryBody,
    });
    const body = new Uint8Array(await res.arrayBuffer());
    const jsonLength = Number(res.headers.get('inference-header-content-length'));
    JSON.parse(Buffer.from(body.buffer, 0, jsonLength).toString('utf8'));
    // The tensor starts right after the JSON, usually not on a 4-byte boundary: copy to align.
    return new Float32Array(body.slice(jsonLength).buffer);
  };

  const jsonMs = await timeRoundTrips(viaJson, values, 2, 8);
  const binaryMs = await timeRoundTrips(viaBinary, values, 5, 30);
  console.log('| 4 MiB FP32 tensor round trip (identity_fp32) | request bytes | ms per round trip (median) |');
  console.log('|---|---|---|');
  console.log(`| JSON | ${jsonBody.length} | ${jsonMs.toFixed(1)} |`);
  console.log(`| binary tensor data | ${binaryBody.length} | ${binaryMs.toFixed(1)} |`);
  console.log(`\nbinary is ${(jsonMs / binaryMs).toFixed(1)}x faster than JSON\n`);
}

/**
 * 64 MiB FP32 through `identity_fp32`: in the body and the answer as binary tensor data, against
 * system shared memory, where the client writes the tensor into a region it created, the request
 * names that region and another for the output, and the client reads the output in place. The
 * client's copy into its region and the server's copy out of it are timed; the client maps its
 * regions with the same addon the server uses.
 */
async function sharedMemoryRoundTrip(): Promise<void> {
  const map = (() => {
    const loaded = loadNpuBinding();
    return 'binding' in loaded ? loaded.binding.mapSharedMemory?.bind(loaded.binding) : undefined;
  })();
  if (!map) {
    console.log('64 MiB round trip skipped: the native addon that maps shared memory is not built (`npm run build:native`)\n');
    return;
  }
  const byteSize = 64 * 1024 * 1024;
  const count = byteSize / 4;
  const values = Float32Array.from({ length: count }, (_, i) => ((i * 7919) % 1000) / 7);
  const url = `${base}/v2/models/identity_fp32/infer`;

  const header = Buffer.from(
    `{"inputs":[{"name":"INPUT0","shape":[${count}],"datatype":"FP32","parameters":{"binary_data_size":${byteSize}}}],"parameters":{"binary_data_output":true}}`,
  );
  const viaBinary = async (): Promise<Float32Array> => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
      body: Buffer.concat([header, Buffer.from(values.buffer)]),
    });
    const body = new Uint8Array(await res.arrayBuffer());
    const jsonLength = Number(res.headers.get('inference-header-content-length'));
    return new Float32Array(body.slice(jsonLength).buffer);
  };

  const keys = { input: `/serve-fn-bench-input-${process.pid}`, output: `/serve-fn-bench-output-${process.pid}` };
  for (const key of Object.values(keys)) {
    const fd = openSync(`/dev/shm${key}`, 'w');
    ftruncateSync(fd, byteSize);
    closeSync(fd);
  }
  const input = map(keys.input, 0, byteSize);
  const output = map(keys.output, 0, byteSize);
  const post = (path: string, body: unknown) => fetch(`${base}/v2/systemsharedmemory${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  try {
    await post('/unregister', {});
    for (const [name, key] of Object.entries(keys)) {
      const res = await post(`/region/${name}/register`, { key, offset: 0, byte_size: byteSize });
      if (!res.ok) throw new Error(`register ${name}: ${res.status} ${await res.text()}`);
    }
    const shmBody = JSON.stringify({
      inputs: [{ name: 'INPUT0', shape: [count], datatype: 'FP32', parameters: { shared_memory_region: 'input', shared_memory_byte_size: byteSize } }],
      outputs: [{ name: 'OUTPUT0', parameters: { shared_memory_region: 'output', shared_memory_byte_size: byteSize } }],
    });
    const viaSharedMemory = async (): Promise<Float32Array> => {
      new Float32Array(input.buffer as ArrayBuffer).set(values);
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: shmBody });
      if (!res.ok) throw new Error(`shared-memory infer: ${res.status} ${await res.text()}`);
      JSON.parse(await res.text());
      // Read where the server wrote it, as a shared-memory client does (Triton's get_contents_as_numpy).
      return new Float32Array(output.buffer as ArrayBuffer);
    };
    const sharedMs = await timeRoundTrips(viaSharedMemory, values, 1, 5);
    const binaryMs = await timeRoundTrips(viaBinary, values, 1, 5);
    console.log('| 64 MiB FP32 tensor round trip (identity_fp32) | request bytes | ms per round trip (median) |');
    console.log('|---|---|---|');
    console.log(`| binary tensor data | ${header.length + byteSize} | ${binaryMs.toFixed(1)} |`);
    console.log(`| system shared memory | ${Buffer.byteLength(shmBody)} | ${sharedMs.toFixed(1)} |`);
    console.log(`\nsystem shared memory is ${(binaryMs / sharedMs).toFixed(1)}x faster than binary tensor data\n`);
  } finally {
    await post('/unregister', {});
    input.unmap();
    output.unmap();
    for (const key of Object.values(keys)) rmSync(`/dev/shm${key}`, { force: true });
  }
}

async function timeRoundTrips(roundTrip: () => Promise<Float32Array>, expected: Float32Array, warmup: number, runs: number): Promise<number> {
  for (let i = 0; i < warmup; i++) check(await roundTrip(), expected);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const out = await roundTrip();
    times.push(performance.now() - start);
    check(out, expected);
  }
  return median(times);
}

function check(actual: Float32Array, expected: Float32Array): void {
  if (actual.length !== expected.length || actual[12345] !== expected[12345] || actual[actual.length - 1] !== expected[expected.length - 1]) {
    throw new Error('the round trip did not give back the tensor it sent');
  }
}

async function requestsPerSecond(): Promise<void> {
  const input0 = Array.from({ length: 16 }, (_, i) => i);
  const ones = Array.from({ length: 16 }, () => 1);
  const json =
    `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","data":${JSON.stringify(input0)}},` +
    `{"name":"INPUT1","shape":[1,16],"datatype":"INT32","data":${JSON.stringify(ones)}}]}`;
  const header = Buffer.from(
    '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},' +
      '{"name":"INPUT1","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}}],"parameters":{"binary_data_output":true}}',
  );
  const binary = Buffer.concat([header, Buffer.from(Int32Array.from(input0).buffer), Buffer.from(Int32Array.from(ones).buffer)]);

  const rows: string[] = [];
  rows.push(await httpLoad('HTTP, JSON', json, { 'content-type': 'application/json' }));
  rows.push(await httpLoad('HTTP, binary tensor data', binary, { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) }));
  rows.push(await grpcLoad(input0, ones));
  console.log('| `simple` infer, 32 concurrent clients | requests/s | p50 ms | p99 ms | errors |');
  console.log('|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}

async function httpLoad(label: string, body: string | Buffer, headers: Record<string, string>): Promise<string> {
  const result = await autocannon({ url: `${base}/v2/models/simple/infer`, method: 'POST', connections: CONNECTIONS, duration: durationS, headers, body });
  return `| ${label} | ${Math.round(result.requests.average)} | ${result.latency.p50} | ${result.latency.p99} | ${result.non2xx + result.errors} |`;
}

/** 32 callers on one channel (HTTP/2 multiplexes them), each sending its next request as soon as the last returns. */
async function grpcLoad(input0: number[], ones: number[]): Promise<string> {
  const Service = loadInferenceService();
  const client = new Service(`127.0.0.1:${GRPC_PORT}`, credentials.createInsecure()) as Client & Record<string, (...args: unknown[]) => unknown>;
  const request = {
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [Buffer.from(Int32Array.from(input0).buffer), Buffer.from(Int32Array.from(ones).buffer)],
  };
  const infer = (): Promise<void> =>
    new Promise((resolve, reject) => client.ModelInfer(request, (err: ServiceError | null) => (err ? reject(err) : resolve())));
  const latencies: number[] = [];
  let errors = 0;
  const run = async (until: number, record: boolean): Promise<void> => {
    while (performance.now() < until) {
      const start = performance.now();
      try {
        await infer();
        if (record) latencies.push(performance.now() - start);
      } catch {
        errors += 1;
      }
    }
  };
  const warmUntil = performance.now() + 1_000;
  await Promise.all(Array.from({ length: CONNECTIONS }, () => run(warmUntil, false)));
  const start = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, () => run(start + durationS * 1_000, true)));
  const elapsedS = (performance.now() - start) / 1_000;
  client.close();
  const sorted = latencies.sort((a, b) => a - b);
  const p = (q: number): string => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(1);
  return `| gRPC ModelInfer, raw_input_contents | ${Math.round(latencies.length / elapsedS)} | ${p(0.5)} | ${p(0.99)} | ${errors} |`;
}
