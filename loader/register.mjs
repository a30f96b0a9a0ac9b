// Imported first by the CLI and by every worker, so user model files written in TypeScript load
// with decorator metadata intact.
import { register } from 'node:module';

register('./swc-hooks.mjs', import.meta.url);
