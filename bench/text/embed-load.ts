import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';

/**
 * The load generator of bench/text/run.ts, in a process of its own: `connections` keep-alive
 * connections, each POSTing the next body of a file (one JSON body a line, taken in order round the
 * list) as soon as its last answer came, for `seconds`; then it waits for the answers still
 * outstanding, so every forward batch it started is counted whole and tokens/s has no partial batch
 * at either end. Tokens are what the server says it embedded (TEI's x-compute-tokens header, which
 * serve-fn sets on /v1/embeddings as TEI does). A closed loop in Node rather than wrk because wrk
 * stops mid-batch: at the tens of requests a second an embedder serves here, the loop's own CPU is
 * small, and it says how small: it prints its own CPU time beside its counts, one JSON object: tokens,
 * requests, failed, seconds, p50 and p99 (ms), cpuMs (this process, every thread, from the first request).
 * Usage: embed-load.ts <url> <bodies.jsonl> <connections> <seconds>
 */
const [url, bodiesFile, connectionsArg, secondsArg] = process.argv.slice(2);
const bodies = readFileSync(bodiesFile!, 'utf8').split('\n').filter((line) => line.length > 0).map((line) => Buffer.from(line));
const connections = Number(connectionsArg);
const agent = new Agent({ keepAlive: true, maxSockets: connections });

function post(body: Buffer): Promise<{ status: number; tokens: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url!, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
      res.resume().on('end', () => resolve({ status: res.statusCode ?? 0, tokens: Number(res.headers['x-compute-tokens'] ?? 0) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

let next = 0;
let tokens = 0;
let failed = 0;
const latencies: number[] = [];
const started = performance.now();
// From here: Node's start and the TypeScript loader are not the load's cost.
const cpuAtStart = process.cpuUsage();
const deadline = started + Number(secondsArg) * 1000;
await Promise.all(Array.from({ length: connections }, async () => {
  while (performance.now() < deadline) {
    const sent = performance.now();
    const answer = await post(bodies[next++ % bodies.length]!).catch(() => ({ status: 0, tokens: 0 }));
    if (answer.status !== 200) {
      failed++;
      continue;
    }
    latencies.push(performance.now() - sent);
    tokens += answer.tokens;
  }
}));
const seconds = (performance.now() - started) / 1000;
agent.destroy();
latencies.sort((a, b) => a - b);
const at = (q: number): number => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
const cpu = process.cpuUsage(cpuAtStart);
console.log(JSON.stringify({ tokens, requests: latencies.length, failed, seconds, p50: at(0.5), p99: at(0.99), cpuMs: (cpu.user + cpu.system) / 1000 }));
