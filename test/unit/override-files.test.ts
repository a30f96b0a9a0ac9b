import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { privateTmpdir } from '../helpers/private-tmpdir.js';
import { removeTree, writeOverrideFolder } from '../../src/model-repository/override-files.js';

privateTmpdir();

const bytes = (text: string) => new TextEncoder().encode(text);

describe('writeOverrideFolder', () => {
  it('writes the files into a fresh model folder and removes it', () => {
    const folder = writeOverrideFolder('m', { 'file:1/model.onnx': bytes('onnx'), 'file:warmup/in.bin': bytes('raw') });
    expect(basename(folder.dir)).toBe('m');
    expect(dirname(folder.dir).startsWith(join(tmpdir(), 'serve-fn-model-'))).toBe(true);
    expect(readFileSync(join(folder.dir, '1', 'model.onnx'), 'utf8')).toBe('onnx');
    expect(readFileSync(join(folder.dir, 'warmup', 'in.bin'), 'utf8')).toBe('raw');
    folder.remove();
    expect(existsSync(folder.dir)).toBe(false);
  });

  it.each([
    ['1/model.onnx', "does not start with 'file:'"],
    ['file:/etc/passwd', 'is not a relative path'],
    ['file:C:/x', 'is not a relative path'],
    ['file:', 'is not a relative path'],
    ['file:../escape', "has an empty, '.' or '..' segment"],
    ['file:1/../../escape', "has an empty, '.' or '..' segment"],
    ['file:1//model.onnx', "has an empty, '.' or '..' segment"],
    ['file:1\\..\\x', 'contains a backslash or NUL character'],
  ])('refuses %s', (key, why) => {
    expect(() => writeOverrideFolder('m', { [key]: bytes('x') })).toThrow(expect.objectContaining({
      code: 'SF_ERR_BAD_REQUEST',
      message: `load of 'm': file parameter '${key}' ${why}; name files like 'file:1/model.onnx', inside the model folder`,
    }));
  });

  it('fails as Triton does, a server error, on a file it cannot write: where another file needs a folder', () => {
    expect(() => writeOverrideFolder('m', { 'file:1': bytes('a'), 'file:1/model.onnx': bytes('b') })).toThrow(expect.objectContaining({
      code: 'SF_ERR_MODEL_FILES_UNWRITABLE',
      message: expect.stringMatching(/^failed to load 'm', failed to poll from model repository: file parameter 'file:1\/model.onnx' could not be written \((EEXIST|ENOTDIR)/),
    }));
  });

  it.each([
    ['2,000 levels deep', `file:${'d/'.repeat(2000)}f`, 'is longer than 1024 bytes'],
    ['33 levels deep', `file:${'d/'.repeat(32)}f`, 'is more than 32 levels deep'],
    ['a 5,000-character file name', `file:1/${'n'.repeat(5000)}`, 'is longer than 1024 bytes'],
    ['a 256-byte file name', `file:1/${'é'.repeat(128)}`, 'has a name longer than 255 bytes'],
  ])('refuses a path %s as a bad request, writing nothing', (_what, key, why) => {
    const before = serveFnFolders();
    expect(() => writeOverrideFolder('m', { 'file:1/model.onnx': bytes('x'), [key]: bytes('x') })).toThrow(expect.objectContaining({
      code: 'SF_ERR_BAD_REQUEST',
      message: `load of 'm': file parameter '${key.length > 80 ? `${key.slice(0, 80)}…` : key}' ${why}; name files like 'file:1/model.onnx', inside the model folder`,
    }));
    expect(serveFnFolders()).toEqual(before);
  });

  it('accepts a path at the bounds: 32 levels, a 255-byte name', () => {
    const folder = writeOverrideFolder('m', { [`file:${'d/'.repeat(31)}f`]: bytes('deep'), [`file:1/${'n'.repeat(255)}`]: bytes('long') });
    expect(readFileSync(join(folder.dir, ...Array(31).fill('d'), 'f'), 'utf8')).toBe('deep');
    folder.remove();
    expect(existsSync(dirname(folder.dir))).toBe(false);
  });
});

describe('removeTree', () => {
  it('removes a folder 2,000 levels deep, which a recursive removal overflows the stack on', () => {
    const root = mkdtempSync(join(tmpdir(), 'serve-fn-deep-'));
    const deepest = join(root, ...Array(2000).fill('d'));
    mkdirSync(deepest, { recursive: true });
    writeFileSync(join(deepest, 'f'), 'x');
    removeTree(root);
    expect(existsSync(root)).toBe(false);
  });

  it('removes symbolic links without following them', () => {
    const outside = mkdtempSync(join(tmpdir(), 'serve-fn-outside-'));
    writeFileSync(join(outside, 'kept'), 'x');
    const root = mkdtempSync(join(tmpdir(), 'serve-fn-links-'));
    symlinkSync(outside, join(root, 'link'));
    removeTree(root);
    expect(existsSync(root)).toBe(false);
    expect(readFileSync(join(outside, 'kept'), 'utf8')).toBe('x');
    removeTree(outside);
  });

  it('is a no-op for a folder already gone', () => {
    expect(() => removeTree(join(tmpdir(), 'serve-fn-never-made'))).not.toThrow();
  });
});

/** The temporary model folders; privateTmpdir() keeps other test runs' folders out of them. */
function serveFnFolders(): string[] {
  return readdirSync(tmpdir()).filter((name) => name.startsWith('serve-fn-model-')).sort();
}

