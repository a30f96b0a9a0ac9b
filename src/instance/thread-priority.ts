import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { createError } from '../errors/index.js';

/**
 * What `serve-fn start` (the production entrypoint) runs model instances at: a lower OS priority
 * than the HTTP thread, so that under saturation the kernel runs the thread that answers health
 * probes and hands out work as soon as it is ready, instead of time-slicing it with compute that
 * can wait a few milliseconds. An idle CPU still goes to the instances: niceness only decides who
 * runs first when both want the same core. It also ranks instances below every other process of
 * the same cgroup, which is why it is not the library's default: on a shared machine (a test run,
 * `serve-fn dev`) other processes would take the CPU from the model.
 */
export const START_INSTANCE_NICENESS = 10;

/** Reads SERVE_FN_INSTANCE_NICENESS: 0 (as the HTTP thread, the default) to 19 (lowest). */
export function instanceNiceness(env: NodeJS.ProcessEnv = process.env): number {
  const value = env.SERVE_FN_INSTANCE_NICENESS;
  if (value === undefined || value === '') return 0;
  const niceness = Number(value);
  if (!Number.isInteger(niceness) || niceness < 0 || niceness > 19) {
    throw createError('SF_ERR_ENV_INVALID', 'SERVE_FN_INSTANCE_NICENESS', `expected an integer from 0 to 19, got '${value}'.`);
  }
  return niceness;
}

/**
 * Raises the niceness of the calling thread only, and answers whether it could. Linux schedules
 * threads individually and setpriority(PRIO_PROCESS, tid) applies to one thread; Node has no
 * gettid, so the id comes from /proc/thread-self. Threads the caller starts later (ONNX Runtime's
 * pools) inherit the value. Elsewhere there is no per-thread niceness and nothing changes.
 */
export function lowerThisThreadPriority(niceness: number): boolean {
  if (niceness === 0 || process.platform !== 'linux') return false;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, niceness);
    return true;
  } catch {
    return false;
  }
}
