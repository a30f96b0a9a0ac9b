import { Agent, get } from 'node:http';

/**
 * Probes a health URL 50 times a second from a process of its own (as the kubelet does), so the
 * latencies are not delayed by a load generator's event loop, and prints `{p50, p99, max}` in ms.
 */
const [url, seconds] = [process.argv[2]!, Number(process.argv[3] ?? 8)];
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const latencies: number[] = [];
const end = performance.now() + seconds * 1000;
while (performance.now() < end) {
  const start = performance.now();
  await new Promise<void>((resolve, reject) => {
    get(url, { agent }, (res) => res.resume().on('end', resolve)).on('error', reject);
  });
  latencies.push(performance.now() - start);
  await new Promise((resolve) => setTimeout(resolve, 20));
}
latencies.sort((a, b) => a - b);
const at = (q: number): number => Number(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!.toFixed(2));
console.log(JSON.stringify({ p50: at(0.5), p99: at(0.99), max: at(1), n: latencies.length }));
agent.destroy();
