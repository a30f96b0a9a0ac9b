import { readlinkSync } from 'node:fs';
import { getPriority } from 'node:os';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { instanceNiceness, lowerThisThreadPriority, START_INSTANCE_NICENESS } from '../../src/instance/thread-priority.js';
import { thrown } from '../helpers/thrown.js';

const threadId = (): number => Number(readlinkSync('/proc/thread-self').split('/').pop());

describe('instanceNiceness', () => {
  it('is 0 when SERVE_FN_INSTANCE_NICENESS is unset or empty (serve-fn start sets 10)', () => {
    expect(START_INSTANCE_NICENESS).toBe(10);
    expect(instanceNiceness({})).toBe(0);
    expect(instanceNiceness({ SERVE_FN_INSTANCE_NICENESS: '' })).toBe(0);
  });

  it('takes 0 to 19', () => {
    expect(instanceNiceness({ SERVE_FN_INSTANCE_NICENESS: '0' })).toBe(0);
    expect(instanceNiceness({ SERVE_FN_INSTANCE_NICENESS: '19' })).toBe(19);
  });

  it.each(['-1', '20', '2.5', 'low'])('refuses %s with SF_ERR_ENV_INVALID naming the variable', (value) => {
    const err = thrown(() => instanceNiceness({ SERVE_FN_INSTANCE_NICENESS: value }));
    expect(err.code).toBe('SF_ERR_ENV_INVALID');
    expect(err.message).toBe(`Environment variable SERVE_FN_INSTANCE_NICENESS is invalid: expected an integer from 0 to 19, got '${value}'.`);
  });
});

describe('lowerThisThreadPriority', () => {
  it('does nothing and says so for niceness 0', () => {
    expect(lowerThisThreadPriority(0)).toBe(false);
    expect(getPriority(threadId())).toBe(0);
  });

  it('lowers the calling thread only, not the other threads of the process', async () => {
    // Vitest runs this file in a process of its own (pool: forks), so lowering its thread is harmless.
    const source = `
      const { readlinkSync } = require('node:fs');
      const { getPriority } = require('node:os');
      const { parentPort } = require('node:worker_threads');
      parentPort.on('message', () => parentPort.postMessage(getPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()))));`;
    const other = new Worker(source, { eval: true });
    const askOther = (): Promise<number> => new Promise((resolve) => { other.once('message', resolve); other.postMessage('?'); });
    expect(await askOther()).toBe(0);
    expect(lowerThisThreadPriority(3)).toBe(true);
    expect(getPriority(threadId())).toBe(3);
    expect(await askOther()).toBe(0);
    await other.terminate();
  });
});
