import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startCli } from './cli-harness.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/models/init-failure-model.ts', import.meta.url));
/** Where the fixture throws, counted in its own source, not in SWC's output. */
const THROW_LINE = readFileSync(FIXTURE, 'utf8').split('\n').findIndex((line) => line.includes('throw new Error')) + 1;

describe('serve-fn start with a model whose initialize() throws in its worker', () => {
  it("exits 1 and prints the catalogue message, then the user's error with its file and line", async () => {
    const cli = await startCli(['start', FIXTURE]);
    expect(await cli.waitForExit(60_000)).toBe(1);
    const output = cli.output();
    expect(output).toContain("serve-fn: Model 'broken' instance 0 failed in initialize(): weights file missing: /models/broken.onnx");
    expect(output).toMatch(/caused by: Error: weights file missing: \/models\/broken\.onnx\n\s+at BrokenModel\.initialize \(/);
    expect(output).toContain(`${FIXTURE}:${THROW_LINE}:`);
  }, 90_000);
});
