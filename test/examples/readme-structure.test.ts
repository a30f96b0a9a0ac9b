import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * The README's shape, which merges of its sections have broken before: every fenced block is
 * closed before the next heading, and each TypeScript block that talks to a client declares it.
 */
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

function blocks(text: string): { readonly lang: string; readonly body: string[]; readonly line: number }[] {
  const found: { lang: string; body: string[]; line: number }[] = [];
  let open: { lang: string; body: string[]; line: number } | undefined;
  text.split('\n').forEach((line, index) => {
    if (line.startsWith('```')) {
      if (open) {
        found.push(open);
        open = undefined;
      } else {
        open = { lang: line.slice(3).trim(), body: [], line: index + 1 };
      }
    } else if (open) {
      open.body.push(line);
    }
  });
  expect(open, `the block opened at line ${open?.line} is never closed`).toBeUndefined();
  return found;
}

describe('README.md', () => {
  it('closes every fenced block, and no heading sits inside one', () => {
    for (const block of blocks(readme)) {
      expect(block.body.filter((l) => /^#{2,4} /.test(l)), `a heading inside the block at line ${block.line}`).toEqual([]);
    }
  });

  it('declares the OpenAI client in each TypeScript block that uses it', () => {
    for (const block of blocks(readme).filter((b) => b.lang === 'ts' && b.body.some((l) => l.includes('openai.')))) {
      expect(block.body.join('\n'), `the block at line ${block.line}`).toMatch(/const openai = new OpenAI\(/);
    }
  });
});
