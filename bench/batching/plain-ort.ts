import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';

/**
 * Plain ONNX Runtime, no server: `count` worker threads, each with its own session
 * (intraOpNumThreads 1), looping `session.run` on one batch for the same stretch of time. What two
 * threads reach over one here is what the machine allows two instances to reach over one, so
 * bench/batching reads its (c) against it, and probe-models.ts chooses a model by it.
 */
export interface PlainOrtJob {
  readonly modelPath: string;
  readonly batch: number;
  readonly inputSize: number;
  readonly durationMs: number;
}

export interface PlainOrtResult {
  /** Samples a second this thread ran. */
  readonly rate: number;
  /** Mean |y| of the first run, to tell a model whose activations vanish or blow up. */
  readonly meanAbs: number;
}

// This module is also each thread's entry point.
if (!isMainThread) await runJob(workerData as PlainOrtJob);

async function runJob(job: PlainOrtJob): Promise<void> {
  const session = await ort.InferenceSession.create(job.modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const x = new ort.Tensor('float32', Float32Array.from({ length: job.batch * job.inputSize }, (_, i) => Math.sin(i)), [job.batch, job.inputSize]);
  const warm = await session.run({ INPUT0: x });
  const y = warm.OUTPUT0!.data as Float32Array;
  const meanAbs = y.reduce((s, v) => s + Math.abs(v), 0) / y.length;
  // Loaded and warm: the timed loops of all threads start together on the main thread's word.
  parentPort!.postMessage('ready');
  await new Promise((resolve) => parentPort!.once('message', resolve));
  let samples = 0;
  const start = performance.now();
  while (performance.now() - start < job.durationMs) {
    await session.run({ INPUT0: x });
    samples += job.batch;
  }
  const result: PlainOrtResult = { rate: samples / ((performance.now() - start) / 1000), meanAbs };
  parentPort!.postMessage(result);
  await session.release();
}

/** Starts `count` threads, waits until all have loaded, then times them running at the same moment. */
export async function runPlainOrt(count: number, job: PlainOrtJob): Promise<PlainOrtResult[]> {
  const workers = Array.from({ length: count }, () => new Worker(new URL(import.meta.url), { workerData: job }));
  const next = (w: Worker): Promise<unknown> =>
    new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
  try {
    await Promise.all(workers.map(next));
    const results = workers.map(next) as Promise<PlainOrtResult>[];
    workers.forEach((w) => w.postMessage('go'));
    return await Promise.all(results);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

/** Samples a second of all `count` threads together. */
export async function plainOrtRate(count: number, job: PlainOrtJob): Promise<number> {
  return (await runPlainOrt(count, job)).reduce((s, r) => s + r.rate, 0);
}
