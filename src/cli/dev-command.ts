import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { watch } from 'chokidar';
import { findEntry, findRepository, findTextModelFolders } from './entry-discovery.js';
import { assertPortFree } from './port-in-use.js';

export interface DevOptions {
  readonly host: string;
  readonly port: number;
  readonly bodyLimit?: number;
  readonly jsonBodyLimit?: number;
  /** Text model flags, passed on to `start` as given. */
  readonly textArgs?: readonly string[];
}

const BIN = fileURLToPath(new URL('../../bin/serve-fn.js', import.meta.url));
const IGNORED = /(^|[/\\])(node_modules|\.git|dist)([/\\]|$)/;

/** The message that tells a standby server to load the user's module and listen. */
export const STANDBY_GO = 'serve-fn:go';
/** What a server `dev` runs says once it listens, so `dev` can report how long a reload took. */
export const SERVER_READY = 'serve-fn:ready';

/**
 * `serve-fn dev`: runs the server in a child process and replaces it when a file under the entry's
 * folder changes. A fresh process is the only way to drop ESM modules and worker threads cleanly.
 * The next child is started ahead of time and waits with serve-fn already loaded, so a reload
 * costs only the user's module, the workers and `initialize`, not Node's start and our imports.
 */
export async function devCommand(entryPath: string | undefined, options: DevOptions): Promise<void> {
  // A folder served as it is (a Triton repository, text model folders) is both what start serves and what is watched.
  const folder = findRepository(entryPath) ?? (findTextModelFolders(entryPath) && resolve(entryPath ?? '.'));
  const entry = folder ? { file: folder, root: folder } : findEntry(entryPath);
  let child: ChildProcess | undefined;
  let standby: ChildProcess | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  /** Paths touched since the last reload, and those of them created meanwhile (an editor's or sed's temporary file). */
  const touched = new Set<string>();
  const created = new Set<string>();
  let reloadStarted: number | undefined;
  let stopping = false;
  await assertPortFree(options.host, options.port, '--port');

  const spawnServer = (): ChildProcess => {
    const limits = [...(options.bodyLimit ? ['--body-limit', String(options.bodyLimit)] : []), ...(options.jsonBodyLimit ? ['--json-body-limit', String(options.jsonBodyLimit)] : [])];
    const args = [BIN, 'start', entry.file, '--dev', '--standby', '--host', options.host, '--port', String(options.port), ...limits, ...(options.textArgs ?? [])];
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    proc.on('message', (message) => {
      if (message !== SERVER_READY || proc !== child || reloadStarted === undefined) return;
      process.stdout.write(`serve-fn dev: reloaded in ${Math.round(performance.now() - reloadStarted)} ms\n`);
      reloadStarted = undefined;
    });
    proc.on('exit', (code, signal) => {
      if (child === proc) child = undefined;
      if (standby === proc) standby = undefined;
      if (!stopping && code !== 0 && signal === null) process.stdout.write(`serve-fn dev: server exited with code ${code}; waiting for a file change\n`);
    });
    return proc;
  };

  const promote = (): void => {
    const next = standby ?? spawnServer();
    standby = spawnServer();
    child = next;
    next.send(STANDBY_GO);
  };

  const stopProcess = async (proc: ChildProcess | undefined): Promise<void> => {
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGTERM');
    const killer = setTimeout(() => proc.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(killer);
  };

  /**
   * The files a burst of events changed: those that exist, and those deleted that existed before it.
   * sed -i and safe-writing editors write a temporary file and rename it over the saved one; the
   * temporary file comes and goes within the burst and is neither named nor a reason to reload.
   */
  const changedFiles = (): string[] => {
    const files = [...touched].filter((path) => existsSync(resolve(entry.root, path)) || !created.has(path));
    touched.clear();
    created.clear();
    return files;
  };

  const restart = (event: string, file: string): void => {
    touched.add(file);
    if (event === 'add' || event === 'addDir') created.add(file);
    clearTimeout(restartTimer);
    restartTimer = setTimeout(() => {
      const files = changedFiles();
      if (files.length === 0) return;
      process.stdout.write(`serve-fn dev: ${files.join(', ')} changed, reloading\n`);
      reloadStarted = performance.now();
      void stopProcess(child).then(promote);
    }, 100);
  };

  // chokidar, not Node's recursive fs.watch: a save that replaces the file (sed -i, vim, JetBrains'
  // safe write) leaves fs.watch watching the old inode, and the next saves reload nothing.
  const watcher = watch(entry.root, { ignoreInitial: true, ignored: (path) => IGNORED.test(relative(entry.root, path)) });
  watcher.on('all', (event, path) => restart(event, relative(entry.root, path)));

  const quit = (): void => {
    stopping = true;
    void Promise.all([watcher.close(), stopProcess(child), stopProcess(standby)]).then(() => process.exit(0));
  };
  process.once('SIGINT', quit);
  process.once('SIGTERM', quit);
  promote();
}
