import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeOverrideFolder } from '../../src/model-repository/override-files.js';

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
});
