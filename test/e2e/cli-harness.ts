import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = fileURLToPath(new URL('../../bin/serve-fn.js', import.meta.url));

/** A port that was free a moment ago, for CLIs that must keep the same port across reloads. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface RunningCli {
  readonly proc: ChildProcess;
  readonly port: number;
  readonly base: string;
  output(): string;
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  waitForExit(timeoutMs?: number): Promise<number | null>;
  stop(): Promise<number | null>;
}

/** Starts the real `serve-fn` CLI as a user would and collects everything it prints. */
export async function startCli(args: string[], env: Record<string, string> = {}, port?: number): Promise<RunningCli> {
  const usePort = port ?? (await freePort());
  const serving = args[0] === 'start' || args[0] === 'dev';
  // gRPC on a free port, so servers of concurrent tests never fight over 8001.
  const grpc = args[0] === 'start' ? ['--grpc-port', '0'] : [];
  const proc = spawn(process.execPath, [BIN, ...args, ...(serving ? ['--port', String(usePort), ...grpc] : [])], {
    cwd: REPO_ROOT,
    // Test files run in parallel on few cores: instances at `serve-fn start`'s niceness 10 would
    // wait behind the other test processes. cli.test.ts checks that default on its own.
    env: { ...process.env, SERVE_FN_INSTANCE_NICENESS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return watchCli(proc, usePort, () => proc.kill('SIGTERM'));
}

/**
 * Runs a shell command line exactly as a user types it (a README's `npx serve-fn ...`) in `cwd`,
 * serving on a free port through SERVE_FN_PORT. It runs in its own process group, so stopping it
 * reaches serve-fn under npx and sh.
 */
export async function startCommandLine(commandLine: string, cwd: string): Promise<RunningCli> {
  const usePort = await freePort();
  const proc = spawn('sh', ['-c', commandLine], {
    cwd,
    env: { ...process.env, SERVE_FN_INSTANCE_NICENESS: '0', SERVE_FN_PORT: String(usePort) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  return watchCli(proc, usePort, () => process.kill(-proc.pid!, 'SIGTERM'));
}

function watchCli(proc: ChildProcess, usePort: number, terminate: () => void): RunningCli {
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    text += chunk.toString();
    for (const l of listeners) l();
  };
  proc.stdout!.on('data', onData);
  proc.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));

  const waitForOutput = (pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const match = text.match(pattern);
        if (match) {
          listeners.delete(check);
          clearTimeout(timer);
          resolve(match);
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`timed out waiting for ${pattern}; output so far:\n${text}`));
      }, timeoutMs);
      listeners.add(check);
      check();
    });

  const waitForExit = (timeoutMs = 20_000): Promise<number | null> =>
    Promise.race([
      exited,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`process did not exit; output:\n${text}`)), timeoutMs).unref()),
    ]);

  return {
    proc,
    port: usePort,
    base: `http://127.0.0.1:${usePort}`,
    output: () => text,
    waitForOutput,
    waitForExit,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) terminate();
      return waitForExit();
    },
  };
}
