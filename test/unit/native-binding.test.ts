import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GE_BUILD_HINT, geMissingReason, loadAddon } from '../../src/backends/npu/native-binding.js';

const dir = mkdtempSync(join(tmpdir(), 'serve-fn-addon-'));
/** Not a shared object: dlopen refuses it, as it refuses a GE addon whose CANN libraries are gone. */
const brokenGe = join(dir, 'serve_fn_npu_ge.node');
writeFileSync(brokenGe, 'not an ELF file\n'.repeat(8));
/** Stands in for the plain addon: require() loads a CommonJS file as it loads a .node file. */
const plain = join(dir, 'serve_fn_npu.cjs');
writeFileSync(plain, 'module.exports = { plain: true };\n');

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadAddon', () => {
  it('loads the first file that loads, with no GE error when nothing failed before it', () => {
    const loaded = loadAddon([join(dir, 'missing.node'), plain]);
    expect(loaded).toEqual({ binding: { plain: true } });
  });

  it('keeps the load error of a GE build that exists but fails, beside the plain addon loaded instead', () => {
    const loaded = loadAddon([brokenGe, plain]);
    expect('binding' in loaded && loaded.binding).toEqual({ plain: true });
    const geLoadError = 'geLoadError' in loaded ? loaded.geLoadError : undefined;
    expect(geLoadError).toMatch(new RegExp(`^${brokenGe.replace(/[.\\/]/g, '\\$&')}: .+`));
    expect(geMissingReason({ geLoadError })).toContain(`serve_fn_npu_ge.node was found but could not be loaded, so the native addon without the GE route was loaded instead: ${geLoadError}`);
  });

  it('says what it tried when nothing loads', () => {
    const loaded = loadAddon([brokenGe, join(dir, 'missing.node')], 'named; no such file');
    expect('reason' in loaded && loaded.reason).toMatch(/^the native addon could not be loaded; tried .*serve_fn_npu_ge\.node \(.+\), .*missing\.node \(named; no such file\)/);
  });
});

describe('geMissingReason', () => {
  it('is the build hint for an addon built without CANN', () => {
    expect(geMissingReason({})).toBe(GE_BUILD_HINT);
  });
});
