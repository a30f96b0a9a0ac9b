import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startCli } from './cli-harness.js';

const tmp = join(REPO_ROOT, 'test', '.tmp', `footprint-${process.pid}`);
mkdirSync(tmp, { recursive: true });
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The modules a served `serve-fn start` resolved (test/fixtures/cli/record-imports.mjs) that match `pattern`. */
async function modulesLoadedByStart(name: string, flags: string[], pattern: RegExp): Promise<string[]> {
  const record = join(tmp, `${name}.txt`);
  const hooks = join(REPO_ROOT, 'test/fixtures/cli/record-imports.mjs');
  const cli = await startCli(['start', 'test/fixtures/cli/greeter-model.ts', ...flags], { NODE_OPTIONS: `--import=${hooks}`, RECORD_IMPORTS: record });
  try {
    await cli.waitForOutput(/serve-fn ready/, 60_000);
    expect((await fetch(`${cli.base}/health/ready`)).status).toBe(200);
  } finally {
    expect(await cli.stop()).toBe(0);
  }
  return [...new Set(readFileSync(record, 'utf8').split('\n').filter((url) => pattern.test(url)).map((url) => url.match(pattern)![0]))].sort();
}

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

describe('serve-fn start', () => {
  const optional = /@grpc\/grpc-js|@grpc\/proto-loader|@fastify\/swagger-ui/;

  it('loads gRPC only when it serves gRPC, and Swagger UI only when it serves /docs', async () => {
    expect(await modulesLoadedByStart('lean', ['--no-grpc', '--docs', 'off'], optional)).toEqual([]);
  }, 120_000);

  it('loads them when they are served', async () => {
    expect(await modulesLoadedByStart('full', [], optional)).toEqual(['@fastify/swagger-ui', '@grpc/grpc-js', '@grpc/proto-loader']);
  }, 120_000);
});
