import { Worker } from 'node:worker_threads';

/**
 * What one trip to a model-instance thread and back costs: an empty message, a 4 MiB tensor
 * handed over (transferred, as serve-fn does) and the same tensor copied (structured clone).
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', (m) => {
  if (m.transfer) parentPort.postMessage(m, [m.data.buffer]);
  else parentPort.postMessage(m);
});`;

const worker = new Worker(WORKER_SOURCE, { eval: true });
const roundTrip = (message: { data?: Float32Array; transfer: boolean }): Promise<{ data?: Float32Array }> =>
  new Promise((resolve) => {
    worker.once('message', resolve);
    worker.postMessage(message, message.transfer && message.data ? [message.data.buffer as ArrayBuffer] : []);
  });

async function measure(label: string, make: () => { data?: Float32Array; transfer: boolean }, calls: number): Promise<string> {
  for (let i = 0; i < 50; i++) await roundTrip(make());
  const start = performance.now();
  for (let i = 0; i < calls; i++) await roundTrip(make());
  const us = ((performance.now() - start) * 1000) / calls;
  return `| ${label} | ${us.toFixed(1)} |`;
}

const elements = (4 * 1024 * 1024) / 4;
const shared = new Float32Array(elements);
console.log('| round trip to a worker thread and back | µs per call |');
console.log('|---|---|');
console.log(await measure('empty message', () => ({ transfer: false }), 20_000));
// The worker hands the same buffer back, so each call transfers the one the previous call returned.
let current: Float32Array<ArrayBufferLike> = new Float32Array(elements);
const handOver = async (): Promise<void> => {
  const back = await roundTrip({ data: current, transfer: true });
  current = back.data!;
};
for (let i = 0; i < 50; i++) await handOver();
const transferStart = performance.now();
for (let i = 0; i < 1000; i++) await handOver();
console.log(`| 4 MiB FP32 tensor, transferred both ways | ${(((performance.now() - transferStart) * 1000) / 1000).toFixed(1)} |`);
console.log(await measure('4 MiB FP32 tensor, copied both ways', () => ({ data: shared, transfer: false }), 300));
await worker.terminate();
