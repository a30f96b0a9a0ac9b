import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readProjectInfo } from '../../src/server/project-info.js';

const root = mkdtempSync(join(tmpdir(), 'serve-fn-project-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function project(name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return dir;
}

describe('readProjectInfo', () => {
  it("takes the title and version of the entry's default export, as serve-fn.config declares them", async () => {
    const dir = project('configured', {
      'package.json': JSON.stringify({ name: 'speech-app', version: '0.0.1' }),
      'serve-fn.config.mjs': "export default { title: 'Speech API', version: '2.1.0', models: [] };",
    });
    expect(await readProjectInfo({ moduleUrl: pathToFileURL(join(dir, 'serve-fn.config.mjs')).href })).toEqual({ title: 'Speech API', version: '2.1.0' });
  });

  it('falls back to the nearest package.json above the entry, field by field', async () => {
    const dir = project('packaged', {
      'package.json': JSON.stringify({ name: '@acme/speech', version: '1.4.0' }),
      'src/models/index.mjs': "export default { title: 'Only a title' };",
      'src/models/plain.mjs': 'export const nothing = 1;',
    });
    expect(await readProjectInfo({ moduleUrl: pathToFileURL(join(dir, 'src/models/plain.mjs')).href })).toEqual({ title: '@acme/speech', version: '1.4.0' });
    expect(await readProjectInfo({ moduleUrl: pathToFileURL(join(dir, 'src/models/index.mjs')).href })).toEqual({ title: 'Only a title', version: '1.4.0' });
  });

  it("reads a model repository's package.json, else names the app after its folder with FastAPI's default version", async () => {
    const dir = project('triton-models', { 'simple/config.pbtxt': 'name: "simple"' });
    expect(await readProjectInfo({ folder: dir })).toEqual({ title: 'triton-models', version: '0.1.0' });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'my-models', version: '5.0.0' }));
    expect(await readProjectInfo({ folder: dir })).toEqual({ title: 'my-models', version: '5.0.0' });
  });
});
