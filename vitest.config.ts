import { availableParallelism } from 'node:os';
import swc from 'unplugin-swc';
import { configDefaults, defineConfig } from 'vitest/config';

// esbuild (vitest's default transform) emits no `design:paramtypes`, which tsyringe and the
// @Batch signature check read, so tests compile through SWC like the CLI does.
export default defineConfig({
  plugins: [swc.vite({ jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { decoratorMetadata: true, legacyDecorator: true }, target: 'es2022' } })],
  test: {
    include: ['test/**/*.test.ts'],
    // test/.tmp holds copies of the checkout (test/e2e/packed-serve-fn.ts packs one): never their tests.
    exclude: [...configDefaults.exclude, 'test/.tmp/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One fork per core, not vitest's default of one fewer: most files wait on child processes (the
    // CLI, Python clients, workers' start-up) more than they compute, and on CI's 2 cores the default
    // of one fork ran the suite in series (Node 20's full suite: about 1,500 s with one fork, 556 s with two).
    maxWorkers: availableParallelism(),
    minWorkers: availableParallelism(),
    // `serve-fn start` waits 5 s on SIGTERM before draining (docs/deployment.md); CLIs the tests start drain at once.
    env: { SERVE_FN_SHUTDOWN_DELAY_MS: '0' },
    // .ci/run reads the JSON report to print its own `N passed, N failed` line.
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
