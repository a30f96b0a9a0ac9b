import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The folders of src/ are layers (docs/architecture.md, "Folders and the direction of imports"):
 * imports between folders go one way, as TEI's crates do (router → core → backends), so a folder
 * can be read knowing only the folders below it.
 */
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

interface Import {
  from: string;
  to: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(entry.name) ? [path] : [];
  });
}

function srcPath(path: string): string {
  return relative(SRC, path).split(sep).join('/');
}

/** Every relative import, export … from, import() and import type of every file under src/. */
function srcImports(): Import[] {
  return sourceFiles(SRC).flatMap((file) => {
    // preProcessFile is the compiler's own scanner: it sees static, dynamic and type-only imports
    // and skips specifiers inside comments and strings.
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    return importedFiles
      .filter(({ fileName }) => fileName.startsWith('.'))
      .map(({ fileName }) => ({ from: srcPath(file), to: srcPath(resolve(dirname(file), fileName)) }));
  });
}

/** The folder directly under src/ a path is in ('' for src/index.ts). */
function folderOf(path: string): string {
  const slash = path.indexOf('/');
  return slash < 0 ? '' : path.slice(0, slash);
}

/** Groups of folders that reach each other through imports (Tarjan's strongly connected components). */
function folderCycles(imports: readonly Import[]): string[][] {
  const edges = new Map<string, Set<string>>();
  for (const { from, to } of imports) {
    const [a, b] = [folderOf(from), folderOf(to)];
    if (a === b) continue;
    if (!edges.has(a)) edges.set(a, new Set());
    if (!edges.has(b)) edges.set(b, new Set());
    edges.get(a)!.add(b);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node)!) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const node of [...edges.keys()].sort()) if (!index.has(node)) visit(node);
  return cycles;
}

/** "a → b: n imports (file => target, …)" for every edge inside a cycle, to say what to move. */
function describeCycle(cycle: readonly string[], imports: readonly Import[]): string {
  const members = new Set(cycle);
  const byEdge = new Map<string, Import[]>();
  for (const imp of imports) {
    const [a, b] = [folderOf(imp.from), folderOf(imp.to)];
    if (a === b || !members.has(a) || !members.has(b)) continue;
    const key = `${a} → ${b}`;
    byEdge.set(key, [...(byEdge.get(key) ?? []), imp]);
  }
  const lines = [...byEdge].sort().map(([edge, list]) => `  ${edge}: ${list.length} (${list.slice(0, 3).map((i) => `${i.from} => ${i.to}`).join(', ')}${list.length > 3 ? ', …' : ''})`);
  return `${cycle.join(' ↔ ')}\n${lines.join('\n')}`;
}

function importsLeaving(imports: readonly Import[], folder: string, allowed: readonly string[]): string[] {
  return imports
    .filter(({ from, to }) => folderOf(from) === folder && !allowed.includes(folderOf(to)))
    .map(({ from, to }) => `${from} => ${to}`);
}

function importsReaching(imports: readonly Import[], folder: string, forbidden: readonly string[]): string[] {
  return imports
    .filter(({ from, to }) => folderOf(from) === folder && forbidden.includes(folderOf(to)))
    .map(({ from, to }) => `${from} => ${to}`);
}

describe('the folders of src/ as layers', () => {
  const imports = srcImports();

  it('reads the imports of every folder (the parser finds them)', () => {
    const folders = new Set(imports.map(({ from }) => folderOf(from)));
    for (const folder of ['spec', 'wire', 'engine', 'instance', 'inference', 'server', 'protocol']) expect(folders).toContain(folder);
    expect(imports.some(({ from, to }) => from === 'instance/worker-entry.ts' && to.startsWith('wire/'))).toBe(true);
  });

  it('has no cycle between folders', () => {
    expect(folderCycles(imports).map((cycle) => describeCycle(cycle, imports))).toEqual([]);
  });

  // The error catalogue is the one thing below the declarations: a declaration's normalizer throws
  // a catalogued error, and errors/ itself imports nothing.
  it('keeps errors/ free of imports from the rest of src/', () => {
    expect(importsLeaving(imports, 'errors', ['errors'])).toEqual([]);
  });

  it('keeps spec/ free of imports from the rest of src/ (but the error catalogue)', () => {
    expect(importsLeaving(imports, 'spec', ['spec', 'errors'])).toEqual([]);
  });

  it('keeps wire/, shared by both sides of the thread boundary, free of either side', () => {
    expect(importsReaching(imports, 'wire', ['engine', 'instance'])).toEqual([]);
  });

  it('keeps the instance side free of the HTTP thread\'s engine', () => {
    expect(importsReaching(imports, 'instance', ['engine'])).toEqual([]);
  });
});
