import { Agent, get } from 'node:http';

/**
 * Probes health URLs from a process of its own (as the kubelet does), so the latencies are not
 * delayed by a load generator's event loop. Every 10 ms it probes each URL in turn, so a served
 * model and a reference server are sampled under the same conditions; prints one
 * `{url, p50, p99, max, n}` (ms) per URL as a JSON array.
 * Usage: health-probe.ts <seconds> <url> [url ...]
 */
const seconds = Number(process.argv[2]);
const urls = process.argv.slice(3);
const agents = urls.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
const latencies: number[][] = urls.map(() => []);

function probe(url: string, agent: Agent): Promise<number> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    get(url, { agent }, (res) => {
      res.resume().on('end', () => (res.statusCode === 200 ? resolve(performance.now() - start) : reject(new Error(`${url}: HTTP ${res.statusCode}`))));
    }).on('error', reject);
  });
}

const end = performance.now() + seconds * 1000;
while (performance.now() < end) {
  for (let i = 0; i < urls.length; i++) latencies[i]!.push(await probe(urls[i]!, agents[i]!));
  await new Promise((resolve) => setTimeout(resolve, 10));
}
const summary = urls.map((url, i) => {
  const sorted = latencies[i]!.sort((a, b) => a - b);
  const at = (q: number): number => Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2));
  return { url, p50: at(0.5), p99: at(0.99), max: at(1), n: sorted.length };
});
console.log(JSON.stringify(summary));
for (const agent of agents) agent.destroy();
