import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

// esbuild (vitest's default transform) emits no `design:paramtypes`, which tsyringe and the
// @Batch signature check read, so tests compile through SWC like the CLI does.
export default defineConfig({
  plugins: [swc.vite({ jsc: { parser: { syntax: 'typescript', decorators: true }, transform: { decoratorMetadata: true, legacyDecorator: true }, target: 'es2022' } })],
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // `serve-fn start` waits 5 s on SIGTERM before draining (docs/deployment.md); CLIs the tests start drain at once.
    env: { SERVE_FN_SHUTDOWN_DELAY_MS: '0' },
    // .ci/run reads the JSON report to print its own `N passed, N failed` line.
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
