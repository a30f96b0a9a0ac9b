import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { writeBertEncoder } from '../fixtures/text/text-model-folders.js';

// Read by each instance when it starts (src/instance/thread-priority.ts); vitest runs this file in a
// process of its own (pool: forks), so nothing else sees it.
process.env.SERVE_FN_INSTANCE_NICENESS = '7';

/** Niceness of every thread of this process, by thread id, as the kernel reports it (/proc/<pid>/task/<tid>/stat, field 19). */
function threadNiceness(): Map<number, number> {
  const niceness = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, 'utf8');
      niceness.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return niceness;
}

const root = scratchFolder('text-thread-priority');
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * The compute of a text model folder runs at the instance niceness, all of it: the worker lowers
 * its own thread before it opens the ONNX Runtime session, so the intra-op pool ONNX Runtime starts
 * then (intraOpNumThreads = every core, its threads beside the calling one) inherits it, and the
 * HTTP thread (niceness 0) wins a core when a health probe or a request arrives.
 */
describe.skipIf(process.platform !== 'linux' || availableParallelism() < 2)('a text model folder under SERVE_FN_INSTANCE_NICENESS', () => {
  let server: ServeFnServer;
  let before: Map<number, number>;
  beforeAll(async () => {
    writeBertEncoder(join(root, 'bge-tiny'), { pooling: 'mean', normalize: true });
    before = threadNiceness();
    server = new ServeFnServer({ models: [], textFolders: [join(root, 'bge-tiny')], collectProcessMetrics: false });
    await server.start();
  }, 60_000);
  afterAll(() => server?.close());

  it("runs the instance's thread and ONNX Runtime's intra-op threads at it, the HTTP thread at 0", async () => {
    const res = await server.app.inject({ method: 'POST', url: '/embed', payload: { inputs: ['what is deep learning?', 'paris'] } });
    expect(res.statusCode).toBe(200);
    const started = [...threadNiceness()].filter(([tid]) => !before.has(tid));
    const lowered = started.filter(([, nice]) => nice === 7);
    // The worker's own thread, and ONNX Runtime's pool: intraOpNumThreads − 1 threads beside the caller.
    expect(lowered.length).toBeGreaterThanOrEqual(availableParallelism());
    expect(threadNiceness().get(process.pid)).toBe(0);
  }, 60_000);
});
