import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mirror } from './build-ge-addon.js';

/**
 * build-ge-addon.ts's copy of native/ into the test build: make must see every changed source as
 * newer than its object, whatever the source's own mtime, and keep the objects of unchanged ones.
 */

const scratch = mkdtempSync(join(tmpdir(), 'serve-fn-mirror-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const LONG_AGO = new Date('2020-01-01T00:00:00Z');

describe('mirror (build-ge-addon.ts)', () => {
  it('rewrites a changed file even when its source is older than the copy, keeps identical ones, drops removed ones', () => {
    const from = join(scratch, 'from');
    const to = join(scratch, 'to');
    mkdirSync(join(from, 'src'), { recursive: true });
    writeFileSync(join(from, 'src', 'same.cc'), 'int same;\n');
    writeFileSync(join(from, 'src', 'edited.cc'), 'int before;\n');
    writeFileSync(join(from, 'src', 'removed.cc'), 'int removed;\n');
    mirror(from, to);
    expect(readFileSync(join(to, 'src', 'edited.cc'), 'utf8')).toBe('int before;\n');
    utimesSync(join(to, 'src', 'same.cc'), LONG_AGO, LONG_AGO);

    // Edited while that build ran: its mtime (set back here) is older than the object.
    writeFileSync(join(from, 'src', 'edited.cc'), 'int after;\n');
    utimesSync(join(from, 'src', 'edited.cc'), LONG_AGO, LONG_AGO);
    rmSync(join(from, 'src', 'removed.cc'));
    mirror(from, to);

    expect(readFileSync(join(to, 'src', 'edited.cc'), 'utf8')).toBe('int after;\n');
    // Written now, so newer than the object built from its old bytes: not the source's old mtime.
    expect(statSync(join(to, 'src', 'edited.cc')).mtimeMs).toBeGreaterThan(LONG_AGO.getTime());
    expect(statSync(join(to, 'src', 'same.cc')).mtimeMs).toBe(LONG_AGO.getTime());
    expect(existsSync(join(to, 'src', 'removed.cc'))).toBe(false);
  });
});
