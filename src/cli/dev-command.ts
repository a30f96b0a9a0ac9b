import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { relative, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { watch } from 'chokidar';
import { findEntry, findRepository, findGenerativeFolders, findTextModelFolders } from './entry-discovery.js';
import { SERVER_READY, type ServerReady } from './dev-messages.js';
import { devProxy, DevUpstream } from './dev-proxy.js';
import { assertPortFree } from './port-in-use.js';
import { SavedFiles } from './saved-files.js';

export interface DevOptions {
  readonly host: string;
  readonly port: number;
  readonly bodyLimit?: number;
  readonly jsonBodyLimit?: number;
  /** Text model flags, passed on to `start` as given. */
  readonly textArgs?: readonly string[];
}

const BIN = fileURLToPath(new URL('../../bin/serve-fn.js', import.meta.url));
/** Longest wait for the requests forwarded to a replaced server before it is stopped. */
const SETTLE_LIMIT_MS = 10_000;
const IGNORED = /(^|[/\\])(node_modules|\.git|dist)([/\\]|$)/;

interface RunningServer {
  readonly proc: ChildProcess;
  upstream?: DevUpstream;
}

/**
 * `serve-fn dev`: holds the port and forwards to a server it runs in a child process (dev-proxy.ts),
 * and replaces that server when a file under the entry's folder changes. A fresh process is the
 * only way to drop ESM modules and worker threads cleanly. The next server loads beside the one
 * serving, which answers until the next one listens, and keeps answering if it fails to load.
 */
export async function devCommand(entryPath: string | undefined, options: DevOptions): Promise<void> {
  // A folder served as it is (a Triton repository, text model folders) is both what start serves and what is watched.
  const folder = findRepository(entryPath) ?? ((findTextModelFolders(entryPath) ?? findGenerativeFolders(entryPath)) && resolve(entryPath ?? '.'));
  const entry = folder ? { file: folder, root: folder } : findEntry(entryPath);
  let serving: RunningServer | undefined;
  let loading: RunningServer | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  const saved = new SavedFiles((path) => existsSync(resolve(entry.root, path)));
  let reloadStarted: number | undefined;
  let stopping = false;
  await assertPortFree(options.host, options.port, '--port');
  const proxy = devProxy(() => serving?.upstream);
  await new Promise<void>((done, fail) => proxy.once('error', fail).listen(options.port, options.host, done));
  const address = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${(proxy.address() as AddressInfo).port}`;

  const stopProcess = async (server: RunningServer | undefined): Promise<void> => {
    if (!server) return;
    const { proc } = server;
    // A stream still open (server-sent events) is cut by the server's drain after this wait.
    if (server.upstream) await Promise.race([server.upstream.settled(), sleep(SETTLE_LIMIT_MS)]);
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      // The server drains what was forwarded to it before it exits.
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    server.upstream?.agent.destroy();
  };

  const spawnServer = (): RunningServer => {
    const limits = [...(options.bodyLimit ? ['--body-limit', String(options.bodyLimit)] : []), ...(options.jsonBodyLimit ? ['--json-body-limit', String(options.jsonBodyLimit)] : [])];
    const args = [BIN, 'start', entry.file, '--dev', '--dev-address', address, '--host', '127.0.0.1', '--port', '0', ...limits, ...(options.textArgs ?? [])];
    const server: RunningServer = { proc: spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }) };
    server.proc.on('message', (message: Partial<ServerReady>) => {
      if (message?.type !== SERVER_READY || typeof message.port !== 'number' || loading !== server) return;
      server.upstream = new DevUpstream(message.port);
      const previous = serving;
      serving = server;
      loading = undefined;
      if (typeof message.banner === 'string') process.stdout.write(message.banner);
      if (reloadStarted !== undefined) process.stdout.write(`serve-fn dev: reloaded in ${Math.round(performance.now() - reloadStarted)} ms\n`);
      reloadStarted = undefined;
      void stopProcess(previous);
    });
    server.proc.on('exit', (code, signal) => {
      server.upstream?.agent.destroy();
      if (stopping || signal !== null) return;
      if (loading === server) {
        loading = undefined;
        reloadStarted = undefined;
        process.stdout.write(serving ? `serve-fn dev: the new version failed to load (exit code ${code}); the previous one keeps serving until the next save\n` : `serve-fn dev: server exited with code ${code}; waiting for a file change\n`);
      } else if (serving === server) {
        serving = undefined;
        process.stdout.write(`serve-fn dev: server exited with code ${code}; waiting for a file change\n`);
      }
    });
    return server;
  };

  const reload = (): void => {
    // A save during a load supersedes it.
    void stopProcess(loading);
    loading = spawnServer();
  };

  const restart = (event: string, file: string): void => {
    if (!saved.note(event, file)) return;
    clearTimeout(restartTimer);
    restartTimer = setTimeout(() => {
      const files = saved.take();
      if (files.length === 0) return;
      process.stdout.write(`serve-fn dev: ${files.join(', ')} changed, reloading\n`);
      reloadStarted = performance.now();
      reload();
    }, 100);
  };

  // chokidar, not Node's recursive fs.watch: a save that replaces the file (sed -i, vim, JetBrains'
  // safe write) leaves fs.watch watching the old inode, and the next saves reload nothing.
  const watcher = watch(entry.root, { ignoreInitial: true, ignored: (path) => IGNORED.test(relative(entry.root, path)) });
  watcher.on('all', (event, path) => restart(event, relative(entry.root, path)));

  const quit = (): void => {
    stopping = true;
    proxy.close();
    void Promise.all([watcher.close(), stopProcess(serving), stopProcess(loading)]).then(() => process.exit(0));
  };
  process.once('SIGINT', quit);
  process.once('SIGTERM', quit);
  reload();
}
