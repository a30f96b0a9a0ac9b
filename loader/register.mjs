// Imported first by the CLI and by every worker, so user model files written in TypeScript load
// with decorator metadata intact.
import { register } from 'node:module';

register('./swc-hooks.mjs', import.meta.url);
// SWC adds helpers and moves decorators, so a stack trace names the user's .ts line only through
// the inline source map the hooks emit (Node's --enable-source-maps, switched on from here).
process.setSourceMapsEnabled(true);
