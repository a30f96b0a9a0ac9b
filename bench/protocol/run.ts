import { readFileSync } from 'node:fs';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import autocannon from 'autocannon';
import { loadInferenceService } from '../../src/protocol/grpc/grpc-server.js';
import { median, startServer, stopServer } from '../lib/load.js';

/**
 * The KServe v2 protocol layer, measured against bench/protocol/protocol-server.ts in a second
 * process: a 4 MiB FP32 tensor round trip as JSON and as binary tensor data, then `simple` infer
 * requests per second at 32 concurrent clients over HTTP (JSON and binary) and gRPC, each with the
 * CPU the load generator (this process) and the server spent on it.
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
  // BENCH_PARTS=rps skips the round trips (the slow JSON one above all) to measure requests per second alone.
  if (process.env.BENCH_PARTS !== 'rps') await tensorRoundTrip();
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

  const httpJson = await measured('HTTP, JSON', async () => () => httpLoad(json, { 'content-type': 'application/json' }));
  const httpBinary = await measured('HTTP, binary tensor data', async () => () =>
    httpLoad(binary, { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) }),
  );
  const grpc = await measured('gRPC ModelInfer, raw_input_contents', () => grpcLoad(input0, ones));
  console.log('| `simple` infer, 32 concurrent clients | requests/s | p50 ms | p99 ms | errors | load generator CPU, % of a core | server CPU µs per request |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of [httpJson, httpBinary, grpc]) console.log(row.line);
  console.log(`\ngRPC reaches ${(grpc.rps / httpBinary.rps).toFixed(2)}x of HTTP binary`);
}

interface LoadRun {
  readonly rps: number;
  readonly requests: number;
  readonly seconds: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
}

/** A load run (after what `prepare` does, a warm-up say) with the CPU this process (the load generator) and the server process spent during it. */
async function measured(label: string, prepare: () => Promise<() => Promise<LoadRun>>): Promise<{ rps: number; line: string }> {
  const run = await prepare();
  const serverBefore = serverCpuSeconds();
  const before = process.cpuUsage();
  const result = await run();
  const own = process.cpuUsage(before);
  const serverUs = ((serverCpuSeconds() ?? NaN) - (serverBefore ?? NaN)) * 1e6;
  const generator = ((own.user + own.system) / 1e4 / result.seconds).toFixed(0);
  const perRequest = Number.isNaN(serverUs) ? 'n/a' : (serverUs / result.requests).toFixed(0);
  return {
    rps: result.rps,
    line: `| ${label} | ${Math.round(result.rps)} | ${result.p50} | ${result.p99} | ${result.errors} | ${generator} | ${perRequest} |`,
  };
}

/** The server process's user + system CPU seconds from Linux's /proc (fields 14 and 15, in clock ticks of 1/100 s); undefined elsewhere. */
function serverCpuSeconds(): number | undefined {
  try {
    const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

async function httpLoad(body: string | Buffer, headers: Record<string, string>): Promise<LoadRun> {
  const result = await autocannon({ url: `${base}/v2/models/simple/infer`, method: 'POST', connections: CONNECTIONS, duration: durationS, headers, body });
  return {
    rps: result.requests.average,
    requests: result.requests.total,
    seconds: result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
  };
}

/**
 * 32 callers on one channel (HTTP/2 multiplexes them), each sending its next request as soon as the
 * last returns. As autocannon sends one prepared body and reads no reply, the request is encoded
 * once and replies stay undecoded bytes, so the figure is the server's, not protobufjs's in here.
 */
async function grpcLoad(input0: number[], ones: number[]): Promise<() => Promise<LoadRun>> {
  const { ModelInfer } = loadInferenceService().service;
  const client = new Client(`127.0.0.1:${GRPC_PORT}`, credentials.createInsecure());
  const request = ModelInfer.requestSerialize({
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [Buffer.from(Int32Array.from(input0).buffer), Buffer.from(Int32Array.from(ones).buffer)],
  });
  const bytes = (b: Buffer): Buffer => b;
  const infer = (): Promise<void> =>
    new Promise((resolve, reject) =>
      client.makeUnaryRequest(ModelInfer.path, bytes, bytes, request, (err: ServiceError | null) => (err ? reject(err) : resolve())),
    );
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
  return async () => {
    const start = performance.now();
    await Promise.all(Array.from({ length: CONNECTIONS }, () => run(start + durationS * 1_000, true)));
    const elapsedS = (performance.now() - start) / 1_000;
    client.close();
    const sorted = latencies.sort((a, b) => a - b);
    const p = (q: number): string => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(1);
    return { rps: latencies.length / elapsedS, requests: latencies.length, seconds: elapsedS, p50: Number(p(0.5)), p99: Number(p(0.99)), errors };
  };
}
