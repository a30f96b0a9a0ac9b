import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, startCli } from './cli-harness.js';

/**
 * SIGTERM in the middle of sustained load: every request the server accepted gets its 200, the ones
 * that arrive during the drain are refused with 503 (or find the port closed), and the process exits 0.
 */
describe('serve-fn start under load, then SIGTERM', () => {
  it('completes every accepted request and exits 0', async () => {
    const dir = join(REPO_ROOT, 'test', '.tmp', `drain-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const marker = join(dir, 'marker.txt');
    writeFileSync(marker, '');
    const cli = await startCli(['start', 'test/fixtures/cli/slow-model.ts', '--host', '127.0.0.1'], { SERVE_FN_TEST_MARKER: marker });
    await cli.waitForOutput(/serve-fn ready/);

    const outcomes: (number | 'refused')[] = [];
    const send = (): Promise<void> =>
      fetch(`${cli.base}/sleep`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ms":150}' }).then(
        async (r) => {
          outcomes.push(r.status);
          if (r.status === 200) expect(await r.json()).toMatchObject({ slept: 150 });
        },
        () => {
          outcomes.push('refused');
        },
      );
    // 16 clients in closed loops, so requests keep arriving before, during and after the signal.
    let signalled = false;
    const clients = Array.from({ length: 16 }, async () => {
      const deadline = Date.now() + 2_500;
      while (Date.now() < deadline && cli.proc.exitCode === null) await send();
    });
    setTimeout(() => {
      signalled = true;
      cli.proc.kill('SIGTERM');
    }, 800);
    await Promise.all(clients);
    expect(signalled).toBe(true);
    expect(await cli.waitForExit()).toBe(0);

    const ok = outcomes.filter((o) => o === 200).length;
    const done = readFileSync(marker, 'utf8').split('\n').filter((l) => l.startsWith('done')).length;
    expect(ok).toBeGreaterThan(16);
    expect(outcomes.every((o) => o === 200 || o === 503 || o === 'refused')).toBe(true);
    // Every request that reached the model was answered: none was accepted and then lost.
    expect(done).toBe(ok);
    const finalized = readFileSync(marker, 'utf8').split('\n').filter((l) => l.startsWith('finalize')).sort();
    expect(finalized).toEqual(['finalize 0', 'finalize 1']);
  }, 30_000);

  it('with SERVE_FN_SHUTDOWN_DELAY_MS keeps serving after SIGTERM, readiness 503, then exits 0', async () => {
    const cli = await startCli(['start', 'test/fixtures/cli/slow-model.ts', '--host', '127.0.0.1'], { SERVE_FN_SHUTDOWN_DELAY_MS: '3000' });
    await cli.waitForOutput(/serve-fn ready/);
    cli.proc.kill('SIGTERM');
    await cli.waitForOutput(/SIGTERM: readiness off, draining in 3000 ms/);
    const ready = await fetch(`${cli.base}/health/ready`);
    expect([ready.status, await ready.json()]).toEqual([503, { error: 'Server is not ready: terminating.', code: 'SF_ERR_NOT_READY' }]);
    const served = await Promise.all(Array.from({ length: 8 }, () => fetch(`${cli.base}/sleep`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ms":10}' })));
    expect(served.map((r) => [r.status, r.headers.get('connection')])).toEqual(served.map(() => [200, 'close']));
    expect(await cli.waitForExit()).toBe(0);
  }, 30_000);
});
