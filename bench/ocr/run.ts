import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { median, startServer, stopServer } from '../lib/load.js';
import { processCpuMs } from '../lib/process-stats.js';
import { OCR_SESSION_OPTIONS } from '../../examples/ocr/ocr-model-files.js';
import { InProcessOcr } from './in-process-ocr.js';

/**
 * Images per second through the OCR example: served (`serve-fn start examples/ocr` in a second
 * process, loaded from this one with autocannon over multipart uploads) and in-process (the same
 * pipeline, the same session settings, the same number of images in flight), in one run. One
 * image in flight shows what serving costs per request; four show what it gains under load.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const image = readFileSync(new URL('../../test/fixtures/ocr/text-lines.png', import.meta.url));
const inFlight = (process.env.IN_FLIGHT ?? '1,4').split(',').map(Number);
const durationS = Number(process.env.DURATION_S ?? 6);
const rounds = Number(process.env.ROUNDS ?? 3);
const warmupS = Number(process.env.WARMUP_S ?? 3);
const port = Number(process.env.PORT ?? 8311);
const expectedLines = ['Invoice4821', 'Totaldue73.50EUR', 'Shipto12HarbourRoad'];

interface Measured {
  readonly imagesPerS: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failures: number;
  /** CPU time of the process doing the work (all its threads) per image: unlike images/s, other jobs on the machine barely move it. */
  readonly cpuMsPerImage: number;
}

function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

function check(lines: readonly { text: string }[], where: string): void {
  const got = lines.map((l) => l.text.replace(/\s+/g, ''));
  if (JSON.stringify(got) !== JSON.stringify(expectedLines)) throw new Error(`${where} read ${JSON.stringify(got)}, expected ${JSON.stringify(expectedLines)}`);
}

/** `concurrency` loops, each reading the image again as soon as its last read is done. */
async function inProcess(ocr: InProcessOcr, concurrency: number, seconds: number): Promise<Measured> {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const start = performance.now();
      check((await ocr.read(image)).lines, 'in-process pipeline');
      latencies.push(performance.now() - start);
    }
  };
  const [start, cpuStart] = [performance.now(), ownCpuMs()];
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsedS = (performance.now() - start) / 1000;
  const cpuMsPerImage = (ownCpuMs() - cpuStart) / latencies.length;
  latencies.sort((a, b) => a - b);
  return { imagesPerS: latencies.length / elapsedS, p50Ms: median(latencies), p99Ms: latencies[Math.floor(latencies.length * 0.99)], failures: 0, cpuMsPerImage };
}

const boundary = 'serve-fn-bench-boundary';
const multipartBody = Buffer.concat([
  Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="text-lines.png"\r\ncontent-type: image/png\r\n\r\n`),
  image,
  Buffer.from(`\r\n--${boundary}--\r\n`),
]);

async function served(pid: number, concurrency: number, seconds: number): Promise<Measured> {
  const cpuStart = processCpuMs(pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/ocr`,
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: multipartBody,
    connections: concurrency,
    duration: seconds,
  });
  const cpuMsPerImage = (processCpuMs(pid) - cpuStart) / result.requests.total;
  return { imagesPerS: result.requests.total / seconds, p50Ms: result.latency.p50, p99Ms: result.latency.p99, failures: result.non2xx + result.errors, cpuMsPerImage };
}

const ocr = await InProcessOcr.create(OCR_SESSION_OPTIONS);
const proc = await startServer([`${root}bin/serve-fn.js`, 'start', `${root}examples/ocr`, '--host', '127.0.0.1', '--port', String(port)], `http://127.0.0.1:${port}/health/ready`, {
  SERVE_FN_LOG_LEVEL: 'warn',
});
const results = new Map(inFlight.map((n) => [n, { inProcess: [] as Measured[], served: [] as Measured[] }]));
try {
  const form = new FormData();
  form.append('image', new Blob([image], { type: 'image/png' }), 'text-lines.png');
  check(((await (await fetch(`http://127.0.0.1:${port}/ocr`, { method: 'POST', body: form })).json()) as { lines: { text: string }[] }).lines, 'server');
  await inProcess(ocr, Math.max(...inFlight), warmupS);
  await served(proc.pid!, Math.max(...inFlight), warmupS);
  // Alternated rounds, so that load from other jobs on the machine falls on both alike.
  for (let round = 1; round <= rounds; round++) {
    for (const [n, r] of results) {
      r.inProcess.push(await inProcess(ocr, n, durationS));
      r.served.push(await served(proc.pid!, n, durationS));
      const [a, b] = [r.inProcess.at(-1)!, r.served.at(-1)!];
      process.stderr.write(`round ${round}, ${n} in flight: in-process ${a.imagesPerS.toFixed(1)} images/s ${a.cpuMsPerImage.toFixed(0)} CPU ms/image, served ${b.imagesPerS.toFixed(1)} images/s ${b.cpuMsPerImage.toFixed(0)} CPU ms/image\n`);
    }
  }
} finally {
  await stopServer(proc);
}

const cell = (list: readonly Measured[]): string =>
  `${median(list.map((m) => m.imagesPerS)).toFixed(1)} | ${median(list.map((m) => m.p50Ms)).toFixed(0)} | ${median(list.map((m) => m.p99Ms)).toFixed(0)} | ${median(list.map((m) => m.cpuMsPerImage)).toFixed(0)} | ${list.reduce((n, m) => n + m.failures, 0)}`;
console.log(`${rounds} alternated rounds of ${durationS} s per setup after ${warmupS} s of warm-up; medians over rounds.`);
console.log(`${cpus().length} CPUs (${cpus()[0].model}), Node ${process.version}, load average ${loadavg()[0].toFixed(1)} at the end.\n`);
console.log('| images in flight | setup | images/s | p50 ms | p99 ms | CPU ms / image | failures |');
console.log('|---|---|---|---|---|---|---|');
for (const [n, r] of results) {
  console.log(`| ${n} | in-process pipeline (one thread, intraOpNumThreads 1) | ${cell(r.inProcess)} |`);
  console.log(`| ${n} | serve-fn /ocr (2 \`ocr\` instances, \`ocr-rec\` @Batch(16, 5000)) | ${cell(r.served)} |`);
}
console.log('');
for (const [n, r] of results) {
  const ratios = r.served.map((m, i) => m.imagesPerS / r.inProcess[i].imagesPerS);
  const cpu = median(r.inProcess.map((m) => m.cpuMsPerImage)) / median(r.served.map((m) => m.cpuMsPerImage));
  console.log(`${n} in flight: served / in-process ${median(ratios).toFixed(2)}× images/s (median of rounds ${ratios.map((x) => x.toFixed(2)).join(', ')}; target ≥ 0.85×); CPU efficiency ${cpu.toFixed(2)}× (in-process CPU per image / served)`);
}
