#!/usr/bin/env node
// Loads TypeScript support first, so user model files in .ts keep their decorator metadata.
import '../loader/register.mjs';

const { main } = await import('../dist/cli/main.js');
await main(process.argv);
