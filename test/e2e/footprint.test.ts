import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cli-harness.js';

/**
 * Native libraries a process maps once it has imported serve-fn's entry, as `serve-fn start` does for
 * a model that uses none of them: each costs resident memory for as long as the server runs.
 */
function nativeLibrariesAfterImport(): string[] {
  const script = "await import('./src/index.ts'); const maps = (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8'); console.log(JSON.stringify([...new Set(maps.match(/[^/\\s]+\\.node$/gm) ?? [])]));";
  const out = execFileSync(process.execPath, ['--import', './loader/register.mjs', '--input-type=module', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()!) as string[];
}

describe("serve-fn's entry", () => {
  it('loads no tokenizer, ONNX Runtime or Ascend addon until a model needs one', () => {
    const loaded = nativeLibrariesAfterImport();
    expect(loaded.filter((name) => /tokenizers|onnxruntime|serve_fn|npu|acl/i.test(name))).toEqual([]);
  });
});
