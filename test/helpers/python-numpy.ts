import { spawnSync } from 'node:child_process';

/** A python3 that imports numpy (Debian's python3-numpy), or undefined: tests that need it skip with that reason. */
export function pythonWithNumpy(): string | undefined {
  for (const candidate of ['python3', '/usr/bin/python3']) {
    const probe = spawnSync(candidate, ['-c', 'import numpy'], { stdio: 'ignore' });
    if (probe.status === 0) return candidate;
  }
  return undefined;
}

/** Runs a Python script and parses the JSON it prints. */
export function runPythonJson<T>(python: string, script: string): T {
  const run = spawnSync(python, [script], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`${script} failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}
