// Node module-customisation hooks that run TypeScript through SWC. Hand-written because the
// maintained runners (tsx, esbuild) do not emit decorator metadata, which tsyringe and @Batch
// rely on, and @swc-node/register's ESM hooks do not map NodeNext `.js` imports back to `.ts`.
import { readFile, access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { transform } from '@swc/core';

const TS_FILE = /\.(c|m)?tsx?$/;

async function exists(url) {
  try {
    await access(fileURLToPath(url));
    return true;
  } catch {
    return false;
  }
}

export async function resolve(specifier, context, nextResolve) {
  const relative = specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('file:');
  if (relative && context.parentURL && /\.(c|m)?js$/.test(specifier)) {
    const url = new URL(specifier, context.parentURL);
    if (!(await exists(url))) {
      const tsUrl = new URL(url.href.replace(/\.(c|m)?js$/, (_, p) => `.${p ?? ''}ts`));
      if (await exists(tsUrl)) return { url: tsUrl.href, shortCircuit: true };
    }
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !TS_FILE.test(new URL(url).pathname)) return nextLoad(url, context);
  const filename = fileURLToPath(url);
  const source = await readFile(filename, 'utf8');
  const output = await transform(source, {
    filename,
    sourceMaps: 'inline',
    module: { type: 'es6' },
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true, tsx: filename.endsWith('x') },
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
    },
  });
  return { format: 'module', source: output.code, shortCircuit: true };
}
