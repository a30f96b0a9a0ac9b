import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { removeTree } from '../../src/model-repository/override-files.js';

/**
 * Points os.tmpdir() (which reads TMPDIR on every call) at a folder of this test file's own, so a
 * test that counts what is left in the temporary folder does not see other test runs' files.
 */
export function privateTmpdir(): void {
  const saved = process.env.TMPDIR;
  let folder = '';
  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'serve-fn-test-tmp-'));
    process.env.TMPDIR = folder;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    removeTree(folder);
  });
}
