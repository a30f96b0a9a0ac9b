import { spawn, spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import autocannon from 'autocannon';
import { loadInferenceService } from '../../src/protocol/grpc/grpc-server.js';
import { median, startServer, stopServer } from '../lib/load.js';

/**
 * The KServe v2 protocol layer, measured against bench/protocol/protocol-server.ts in a second
 * process: a 4 MiB FP32 tensor round trip as JSON and as binary tensor data, a 64 MiB one as
 * binary tensor data and through system shared memory, then `simple` infer requests per second at
 * 32 concurrent clients over HTTP (JSON and binary) and gRPC, each with the CPU the load generator
 * (this process) and the server spent on it. Where h2load (nghttp2's load generator, Debian's
 * nghttp2-client) is on PATH, HTTP binary and gRPC run once more from it: a native client speaking
 * HTTP/1.1 and HTTP/2 alike, so neither figure is bound by a JavaScript client sharing the server's cores.
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
  if (process.env.BENCH_PARTS !== 'rps') {
    await tensorRoundTrip();
    await sharedMemoryRoundTrip();
  }
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
 * client's copy into its region and its copy out of the output region are timed with the server's
 * copies; Node has no mmap, so the client copies through a descriptor as the server does.
 */
async function sharedMemoryRoundTrip(): Promise<void> {
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
  const [input, output] = Object.values(keys).map((key) => {
    const fd = openSync(`/dev/shm${key}`, 'w+');
    ftruncateSync(fd, byteSize);
    return fd;
  });
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
      writeSync(input, values, 0, byteSize, 0);
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: shmBody });
      if (!res.ok) throw new Error(`shared-memory infer: ${res.status} ${await res.text()}`);
      JSON.parse(await res.text());
      // Read where the server wrote it, as a shared-memory client does (Triton's get_contents_as_numpy).
      const answer = new Float32Array(count);
      readSync(output, answer, 0, byteSize, 0);
      return answer;
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
    closeSync(input);
    closeSync(output);
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

  const httpJson = await measured('HTTP, JSON', async () => () => httpLoad(json, { 'content-type': 'application/json' }));
  const httpBinary = await measured('HTTP, binary tensor data', async () => () =>
    httpLoad(binary, { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) }),
  );
  const grpcMessage = grpcRequest(input0, ones);
  const grpc = await measured('gRPC ModelInfer, raw_input_contents', () => grpcLoad(grpcMessage));
  const rows = [httpJson, httpBinary, grpc];
  const native = h2loadVersion();
  if (native) {
    const binaryHeaders = ['content-type: application/octet-stream', `inference-header-content-length: ${header.length}`];
    const h2Binary = await measured(`HTTP, binary tensor data (${native})`, async () => () => h2load(['--h1', '-c', String(CONNECTIONS)], `${base}/v2/models/simple/infer`, binaryHeaders, binary));
    // One connection with 32 streams, as the 32 callers on one channel above; h2load reads no grpc-status, so the model's success count tells errors.
    const h2Grpc = await measured(`gRPC ModelInfer, raw_input_contents (${native})`, async () => async () => {
      const before = await simpleSuccesses();
      const run = await h2load(['-c', '1', '-m', String(CONNECTIONS)], `http://127.0.0.1:${GRPC_PORT}${loadInferenceService().service.ModelInfer.path}`, ['content-type: application/grpc', 'te: trailers'], grpcFrame(grpcMessage));
      return { ...run, errors: run.errors + Math.max(0, run.requests - ((await simpleSuccesses()) - before)) };
    });
    rows.push(h2Binary, h2Grpc);
  }
  console.log('| `simple` infer, 32 concurrent clients | requests/s | p50 ms | p99 ms | errors | load generator CPU, % of a core | server CPU µs per request |');
  console.log('|---|---|---|---|---|---|---|');
  for (const row of rows) console.log(row.line);
  console.log(`\ngRPC reaches ${(grpc.rps / httpBinary.rps).toFixed(2)}x of HTTP binary with the JavaScript clients (autocannon, @grpc/grpc-js)`);
  if (native) console.log(`gRPC reaches ${(rows[4].rps / rows[3].rps).toFixed(2)}x of HTTP binary with ${native} for both (its p50 column is its mean; it reports no p99)`);
}

interface LoadRun {
  readonly rps: number;
  readonly requests: number;
  readonly seconds: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
  /** CPU seconds of a load generator running outside this process. */
  readonly generatorCpuSeconds?: number;
}

/** A load run (after what `prepare` does, a warm-up say) with the CPU this process (the load generator) and the server process spent during it. */
async function measured(label: string, prepare: () => Promise<() => Promise<LoadRun>>): Promise<{ rps: number; line: string }> {
  const run = await prepare();
  const serverBefore = serverCpuSeconds();
  const before = process.cpuUsage();
  const result = await run();
  const own = process.cpuUsage(before);
  const serverUs = ((serverCpuSeconds() ?? NaN) - (serverBefore ?? NaN)) * 1e6;
  const generator = ((result.generatorCpuSeconds ?? (own.user + own.system) / 1e6) * 100 / result.seconds).toFixed(0);
  const perRequest = Number.isNaN(serverUs) ? 'n/a' : (serverUs / result.requests).toFixed(0);
  return {
    rps: result.rps,
    line: `| ${label} | ${Math.round(result.rps)} | ${result.p50} | ${Number.isNaN(result.p99) ? 'n/a' : result.p99} | ${result.errors} | ${generator} | ${perRequest} |`,
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

/** The encoded ModelInferRequest. */
function grpcRequest(input0: number[], ones: number[]): Buffer {
  return loadInferenceService().service.ModelInfer.requestSerialize({
    model_name: 'simple',
    inputs: [
      { name: 'INPUT0', datatype: 'INT32', shape: [1, 16] },
      { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
    ],
    raw_input_contents: [Buffer.from(Int32Array.from(input0).buffer), Buffer.from(Int32Array.from(ones).buffer)],
  });
}

/** A message as gRPC frames it on HTTP/2 (PROTOCOL-HTTP2.md, Length-Prefixed-Message): uncompressed flag, 4-byte length, the bytes. */
function grpcFrame(message: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/**
 * 32 callers on one channel (HTTP/2 multiplexes them), each sending its next request as soon as the
 * last returns. As autocannon sends one prepared body and reads no reply, the request is encoded
 * once and replies stay undecoded bytes, so the figure is the server's, not protobufjs's in here.
 */
async function grpcLoad(request: Buffer): Promise<() => Promise<LoadRun>> {
  const { ModelInfer } = loadInferenceService().service;
  const client = new Client(`127.0.0.1:${GRPC_PORT}`, credentials.createInsecure());
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

/** h2load's version line, or undefined when it is not on PATH. */
function h2loadVersion(): string | undefined {
  const probe = spawnSync('h2load', ['--version'], { encoding: 'utf8' });
  return probe.status === 0 ? probe.stdout.trim() : undefined;
}

/**
 * Runs h2load for the load duration, posting `body` to `url`. Its CPU is read from the shell that
 * waited for it (the children's user and system ticks of Linux's /proc/<pid>/stat, 1/100 s each).
 */
async function h2load(args: readonly string[], url: string, headers: readonly string[], body: Buffer): Promise<LoadRun> {
  const dir = mkdtempSync(join(tmpdir(), 'serve-fn-bench-'));
  try {
    const file = join(dir, 'body');
    writeFileSync(file, body);
    const command = [...args, '-D', String(durationS), '-d', file, ...headers.flatMap((h) => ['-H', h]), url];
    const child = spawn('sh', ['-c', 'h2load "$@" || exit 1; cat /proc/$$/stat', 'sh', ...command], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    if (code !== 0) throw new Error(`h2load failed:\n${out}`);
    const number = (pattern: RegExp): number => Number(pattern.exec(out)?.[1] ?? NaN);
    const [cutime, cstime] = out.trim().split('\n').at(-1)!.split(') ')[1].split(' ').slice(13, 15).map(Number);
    const seconds = number(/finished in ([\d.]+)s/);
    const requests = number(/(\d+) succeeded/);
    return {
      rps: number(/finished in [\d.]+s, ([\d.]+) req\/s/),
      requests,
      seconds,
      p50: meanRequestMs(out),
      p99: NaN,
      errors: number(/(\d+) failed/) + number(/(\d+) errored/) + number(/(\d+) timeout/) + number(/(\d+) 3xx/) + number(/(\d+) 4xx/) + number(/(\d+) 5xx/),
      generatorCpuSeconds: (cutime + cstime) / 100,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The mean of h2load's `time for request` line (min, max, mean, sd; each in us, ms or s), in ms. */
function meanRequestMs(out: string): number {
  const times = [.../time for request:(.*)/.exec(out)?.[1].matchAll(/([\d.]+)(us|ms|s)/g) ?? []];
  const [, value, unit] = times[2] ?? [];
  return Number(value) * ({ us: 1e-3, ms: 1, s: 1e3 }[unit as 'us' | 'ms' | 's'] ?? NaN);
}

/** How many `simple` requests the server has answered successfully, by its statistics route (every version). */
async function simpleSuccesses(): Promise<number> {
  const stats = (await (await fetch(`${base}/v2/models/simple/stats`)).json()) as { model_stats: { inference_stats: { success: { count: number } } }[] };
  return stats.model_stats.reduce((sum, m) => sum + m.inference_stats.success.count, 0);
}
