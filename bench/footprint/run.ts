import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { stopServer } from '../lib/load.js';
import { processRssKiB } from '../lib/process-stats.js';

/**
 * Issue 23's footprint: resident memory of `serve-fn start` serving one small model (issue 16's
 * validated echo, one worker-thread instance) beside the same model on FastAPI + uvicorn
 * (bench/overhead/fastapi_echo.py, one process), and of `serve-fn dev` with every process it runs.
 * Measured from this process, after 200 requests to each server: VmRSS from /proc.
 *
 *   node --import ./loader/register.mjs bench/footprint/run.ts
 *
 * SERVE_FN_ROOT measures another checkout's serve-fn (built: dist/) with this bench, for before/after.
 */
const here = fileURLToPath(new URL('../../', import.meta.url));
const root = process.env.SERVE_FN_ROOT ?? here;
// Inside the measured checkout, so its `serve-fn` import resolves to that checkout (a copy of bench/footprint there for an older one).
const model = `${root}bench/footprint/echo-model.ts`;
const requests = 200;
const body = JSON.stringify({ text: 'serve small models from typescript', n: 41 });

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** The process and every process under it (/proc/<pid>/task/<pid>/children), with their command lines. */
function processTree(pid: number): { pid: number; command: string }[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).map((arg) => arg.replace(root, '').replace(here, '')).join(' ');
  return [{ pid, command }, ...children.flatMap(processTree)];
}

async function serve(command: string, args: string[], readyUrl: string): Promise<ChildProcess> {
  const proc = spawn(command, args, { cwd: here, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, SERVE_FN_INSTANCE_NICENESS: '0' } });
  let errors = '';
  proc.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${command} ${args.join(' ')} exited with ${proc.exitCode}:\n${errors}`);
    if (await fetch(readyUrl).then((r) => r.ok, () => false)) return proc;
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error(`${command} ${args.join(' ')} did not become ready:\n${errors}`);
}

async function measure(name: string, command: string, args: (port: number) => string[], readyPath: string): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = await serve(command, args(port), `${base}${readyPath}`);
  try {
    for (let i = 0; i < requests; i++) {
      const res = await fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      if (!res.ok) throw new Error(`${name}: /echo answered ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    }
    const tree = processTree(proc.pid!);
    const rss = tree.map(({ pid, command }) => ({ command, mib: processRssKiB(pid) / 1024 }));
    const total = rss.reduce((sum, p) => sum + p.mib, 0);
    console.log(`| ${name} | ${tree.length} | ${total.toFixed(0)} MiB | ${rss.map((p) => `${p.mib.toFixed(0)}: \`${p.command.slice(0, 60)}\``).join('<br>')} |`);
  } finally {
    await stopServer(proc);
  }
}

const bin = `${root}bin/serve-fn.js`;
if (!existsSync(`${root}dist/cli/main.js`)) throw new Error(`${root}: build serve-fn first (npm run build)`);
// Debian's python3, where apt-get installs python3-fastapi (a pyenv python3 on PATH lacks it); PYTHON overrides.
const python = process.env.PYTHON ?? '/usr/bin/python3';

console.log(`serve-fn at ${root}; ${requests} requests each, then VmRSS; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
console.log('| server | processes | RSS | each (MiB) |');
console.log('|---|---|---|---|');
await measure('uvicorn + FastAPI', python, (port) => [`${here}bench/overhead/fastapi_echo.py`, String(port)], '/ready');
await measure('`serve-fn start` (gRPC and /docs on, the defaults)', process.execPath, (port) => [bin, 'start', model, '--port', String(port), '--grpc-port', '0'], '/health/ready');
await measure('`serve-fn start --no-grpc --docs off`', process.execPath, (port) => [bin, 'start', model, '--port', String(port), '--no-grpc', '--docs', 'off'], '/health/ready');
await measure('`serve-fn dev`', process.execPath, (port) => [bin, 'dev', model, '--port', String(port)], '/health/ready');
