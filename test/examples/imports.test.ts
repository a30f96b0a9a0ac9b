import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const EXAMPLES = join(import.meta.dirname, '..', '..', 'examples');

/** Packages whose records live in one module copy: serve-fn re-exports them, and a project's own copy is never seen. */
const RE_EXPORTED = ['tsyringe', 'class-transformer'];

describe('the examples', () => {
  it("import tsyringe and class-transformer from 'serve-fn', as the README says", () => {
    const files = readdirSync(EXAMPLES, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const offending = files.flatMap((file) => {
      const source = readFileSync(join(EXAMPLES, file), 'utf8');
      return RE_EXPORTED.filter((name) => source.includes(`from '${name}'`)).map((name) => `${file}: ${name}`);
    });
    expect(files.length).toBeGreaterThan(0);
    expect(offending).toEqual([]);
  });
});
