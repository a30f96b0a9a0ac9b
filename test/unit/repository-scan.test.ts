import { rmSync, symlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { folderFingerprint, isModelRepository, listModelFolders, listVersions } from '../../src/model-repository/repository-scan.js';
import { scratchFolder, writeFiles } from '../fixtures/repository/repository-files.js';

const root = scratchFolder('scan');
writeFiles(root, {
  'a/config.pbtxt': '',
  'b/1/model.onnx': 'x',
  'b/10/model.onnx': 'x',
  'b/2/model.onnx': 'x',
  'b/02/model.onnx': 'x',
  'b/0/model.onnx': 'x',
  'b/latest/model.onnx': 'x',
  '.hidden/1/model.onnx': 'x',
  'notes.txt': 'not a model',
  'project/index.ts': '',
});
symlinkSync(join(root, 'b'), join(root, 'linked'));

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('repository scanning', () => {
  it('lists model folders, following links and skipping hidden ones', () => {
    expect(listModelFolders(root)).toEqual(['a', 'b', 'linked', 'project']);
    expect(() => listModelFolders(join(root, 'notes.txt'))).toThrow(`Model repository '${join(root, 'notes.txt')}' is invalid: it is not a folder`);
  });

  it("lists numeric version folders as Triton does (no leading zero, not 0)", () => {
    expect(listVersions(join(root, 'b'))).toEqual([1, 2, 10]);
  });

  it('recognises a repository by a config.pbtxt or a version folder in a subfolder', () => {
    expect(isModelRepository(root)).toBe(true);
    expect(isModelRepository(join(root, 'project'))).toBe(false);
    expect(isModelRepository(join(root, 'b'))).toBe(false);
    expect(isModelRepository(join(root, 'missing'))).toBe(false);
  });

  it('changes the fingerprint when a file is added or rewritten, and only then', () => {
    const dir = join(root, 'a');
    const before = folderFingerprint(dir);
    expect(folderFingerprint(dir)).toBe(before);
    writeFiles(root, { 'a/1/model.onnx': 'x' });
    const added = folderFingerprint(dir);
    expect(added).not.toBe(before);
    utimesSync(join(dir, '1', 'model.onnx'), new Date(1000), new Date(1000));
    expect(folderFingerprint(dir)).not.toBe(added);
  });
});
