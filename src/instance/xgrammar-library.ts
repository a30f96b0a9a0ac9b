import Module, { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import type * as XGrammar from '@mlc-ai/web-xgrammar';

/** One instance of xgrammar's WASM build (@mlc-ai/web-xgrammar, https://github.com/mlc-ai/xgrammar/tree/main/web): its classes and the last fatal message its C++ core printed. */
export interface XGrammarInstance {
  readonly lib: typeof XGrammar;
  /** xgrammar's C++ core reports a bad schema, regex or grammar by printing `[FATAL] ...` and aborting the WASM instance; this is that line. */
  lastFatal(): string | undefined;
}

type CommonJsModule = { filename: string; paths: string[]; exports: unknown; _compile(source: string, filename: string): void };
type ModuleClass = (new (id: string) => CommonJsModule) & { _nodeModulePaths(from: string): string[] };

/**
 * Loads a fresh instance of the library. Its published lib/index.js is a UMD bundle inside a
 * `"type": "module"` package, so `import` gives no exports and `require` refuses it; it is
 * compiled here as the CommonJS module it is written as (Node's own CommonJS wrapper, which also
 * serves the bundle's `await import('module')`). Each call evaluates the bundle anew: after a WASM
 * abort (xgrammar's way of rejecting an invalid schema) that instance is unusable, and a new one is
 * the only way back (measured: the next compile on an aborted instance hangs).
 */
export function loadXGrammar(): Promise<XGrammarInstance> {
  // One at a time: each swaps console.error while it initialises, and overlapping swaps would restore out of order.
  const next = loading.then(loadInstance, loadInstance);
  loading = next;
  return next;
}

let loading: Promise<unknown> = Promise.resolve();

async function loadInstance(): Promise<XGrammarInstance> {
  const file = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
  const ModuleCtor = Module as unknown as ModuleClass;
  const mod = new ModuleCtor(file);
  mod.filename = file;
  mod.paths = ModuleCtor._nodeModulePaths(file);
  mod._compile(readFileSync(file, 'utf8'), file);
  const lib = mod.exports as typeof XGrammar;
  let fatal: string | undefined;
  // The WASM runtime binds console.error once, while it initialises: route its fatal lines here
  // (they name what is wrong with a schema) and let every other message through.
  const original = console.error;
  console.error = (...args: unknown[]) => {
    const text = args.map(String).join(' ');
    if (text.startsWith('[FATAL]')) fatal = text.replace(/^\[FATAL\] \S+: (Check failed: \(.*?\) is false: )?/, '');
    else if (!text.startsWith('Aborted(')) original.apply(console, args);
  };
  try {
    (await lib.Grammar.builtinJSONGrammar()).dispose();
  } finally {
    console.error = original;
  }
  return { lib, lastFatal: () => fatal };
}
