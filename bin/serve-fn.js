#!/usr/bin/env node
// The commands that import user model files (start, openapi) load the TypeScript loader themselves
// (cli/main.ts): `--version`, `--help`, `new` and `dev`'s own process do without its hooks thread.
const { main } = await import('../dist/cli/main.js');
await main(process.argv);
