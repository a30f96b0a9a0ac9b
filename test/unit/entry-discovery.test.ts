import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { findEntry, findRepository, FOLDER_ENTRIES, loadModels, modelsToServe } from '../../src/cli/entry-discovery.js';
import { readModel } from '../../src/metadata/reflection.js';
import { ServeFnError } from '../../src/errors/index.js';

const fixtures = fileURLToPath(new URL('../fixtures/models/', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'serve-fn-entry-'));

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

/** A folder holding empty files with these names. */
function folder(name: string, files: readonly string[]): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  for (const file of files) writeFileSync(join(dir, file), '');
  return dir;
}

function thrown(fn: () => unknown): ServeFnError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ServeFnError);
    return err as ServeFnError;
  }
  throw new Error('expected an error');
}

describe('findEntry', () => {
  it('takes a file as the entry and its folder as the watched root', () => {
    const file = join(fixtures, 'entry-models.ts');
    expect(findEntry(file)).toEqual({ file, moduleUrl: pathToFileURL(file).href, root: fixtures.replace(/\/$/, '') });
  });

  it('looks for serve-fn.config, then index, .ts before .js, in a folder', () => {
    expect(FOLDER_ENTRIES).toEqual(['serve-fn.config.ts', 'serve-fn.config.js', 'index.ts', 'index.js']);
    const all = folder('all', ['index.js', 'index.ts', 'serve-fn.config.js', 'serve-fn.config.ts']);
    expect(findEntry(all).file).toBe(join(all, 'serve-fn.config.ts'));
    const compiled = folder('compiled', ['index.js', 'serve-fn.config.js']);
    expect(findEntry(compiled).file).toBe(join(compiled, 'serve-fn.config.js'));
    const plain = folder('plain', ['index.js', 'index.ts', 'model.ts']);
    expect(findEntry(plain)).toEqual({ file: join(plain, 'index.ts'), moduleUrl: pathToFileURL(join(plain, 'index.ts')).href, root: plain });
  });

  it('reports a missing path and a folder without an entry file, naming the path and what to pass', () => {
    const missing = thrown(() => findEntry(join(scratch, 'nowhere')));
    expect(missing.code).toBe('SF_ERR_ENTRY_NOT_FOUND');
    expect(missing.message).toBe(
      `No entry found at '${join(scratch, 'nowhere')}': pass a .ts/.js file exporting @Model classes, or a folder with serve-fn.config.ts or index.ts.`,
    );
    const empty = folder('empty', ['model.ts']);
    expect(thrown(() => findEntry(empty)).code).toBe('SF_ERR_ENTRY_NOT_FOUND');
  });
});

describe('loadModels', () => {
  it('collects exported @Model classes and those listed in a default { models } export, once each', async () => {
    const models = await loadModels(findEntry(join(fixtures, 'entry-models.ts')));
    expect(models.map((m) => readModel(m)?.options.name)).toEqual(['exported', 'listed']);
  });

  it('reports an entry without models, naming the file', async () => {
    const entry = findEntry(join(fixtures, 'no-models.ts'));
    const error = await loadModels(entry).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ServeFnError);
    expect((error as ServeFnError).code).toBe('SF_ERR_ENTRY_NO_MODELS');
    expect((error as Error).message).toBe(`Entry '${entry.file}' exports no @Model classes.`);
  });
});

describe('findRepository', () => {
  it('recognises a Triton model repository folder, not a project folder or a file', () => {
    const repo = folder('repo', []);
    mkdirSync(join(repo, 'simple', '1'), { recursive: true });
    writeFileSync(join(repo, 'simple', 'config.pbtxt'), '');
    expect(findRepository(repo)).toBe(repo);
    const project = folder('project-with-models', ['index.ts']);
    mkdirSync(join(project, 'simple', '1'), { recursive: true });
    expect(findRepository(project)).toBeUndefined();
    expect(findRepository(join(repo, 'simple', 'config.pbtxt'))).toBeUndefined();
    expect(findRepository(join(scratch, 'absent'))).toBeUndefined();
  });
});

describe('modelsToServe', () => {
  it('passes --model-control-mode on for an entry module, which has no repository folder to carry it', async () => {
    const served = await modelsToServe(join(fixtures, 'entry-models.ts'), { controlMode: 'explicit', startupModels: ['*'] });
    expect(served.repository).toBeUndefined();
    expect(served.modelControlMode).toBe('explicit');
  });
});

describe('modelsToServe: diffusers pipeline folders', () => {
  it('serves a folder with model_index.json (or a folder of them) as diffusion pipelines, looked for before text folders', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'serve-fn-diffusion-discovery-'));
    try {
      for (const name of ['b-dit', 'a-dit']) {
        mkdirSync(join(parent, name), { recursive: true });
        writeFileSync(join(parent, name, 'model_index.json'), '{"_class_name":"StableDiffusion3Pipeline"}');
      }
      expect(await modelsToServe(join(parent, 'a-dit'))).toMatchObject({ models: [], textFolders: [], diffusionFolders: [join(parent, 'a-dit')] });
      expect(await modelsToServe(parent)).toMatchObject({ diffusionFolders: [join(parent, 'a-dit'), join(parent, 'b-dit')] });
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('modelsToServe: GGUF files', () => {
  it('serves a .gguf path, or the .gguf files of a folder, by their GGUF magic', async () => {
    const dir = folder('gguf-models', []);
    writeFileSync(join(dir, 'b.gguf'), Buffer.from('GGUF\x03\x00\x00\x00'));
    writeFileSync(join(dir, 'a.gguf'), Buffer.from('GGUF\x03\x00\x00\x00'));
    // Named .gguf but not one (a download that failed, say): not served.
    writeFileSync(join(dir, 'broken.gguf'), 'not found');
    expect(await modelsToServe(join(dir, 'a.gguf'))).toEqual({ models: [], textFolders: [], ggufFiles: [join(dir, 'a.gguf')], modelControlMode: undefined });
    expect((await modelsToServe(dir)).ggufFiles).toEqual([join(dir, 'a.gguf'), join(dir, 'b.gguf')]);
  });
});
