import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TEMPLATE_NAMES, createProject, fillPlaceholders, placeholdersFor, serveFnDependency } from '../../src/cli/new-command.js';
import { ServeFnError } from '../../src/errors/index.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
let tmp: string;

beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'serve-fn-new-'));
});

afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ServeFnError);
  return (err as ServeFnError).code;
}

/** A templates folder with one `basic` template that exercises names, text, binaries and the gitignore rename. */
function fakeTemplates(): string {
  const dir = join(tmp, 'templates');
  mkdirSync(join(dir, 'basic', 'src'), { recursive: true });
  writeFileSync(join(dir, 'basic', 'src', '{{modelName}}.model.ts'), 'export class {{className}} {} // {{name}} {{unknown}}');
  writeFileSync(join(dir, 'basic', 'package.json'), '{"name":"{{name}}","dependencies":{"serve-fn":"{{serveFn}}"}}');
  writeFileSync(join(dir, 'basic', 'gitignore'), 'node_modules/\n');
  writeFileSync(join(dir, 'basic', 'model.onnx'), Buffer.from([0, 0xff, ...Buffer.from('{{name}}')]));
  return dir;
}

describe('placeholdersFor', () => {
  it('derives the project, model and class names from the folder name', () => {
    expect(placeholdersFor('/work/My Cool-app2', '^9.9.9')).toEqual({ name: 'my-cool-app2', modelName: 'my_cool_app2', className: 'MyCoolApp2', serveFn: '^9.9.9' });
  });

  it('gives a class name that does not start with a digit, and takes the serve-fn spec', () => {
    expect(placeholdersFor('3d_scan', 'file:../serve-fn-0.1.0.tgz')).toEqual({ name: '3d-scan', modelName: '3d_scan', className: 'Model3dScan', serveFn: 'file:../serve-fn-0.1.0.tgz' });
  });
});

describe('fillPlaceholders', () => {
  it('fills known keys and leaves other braces as they are', () => {
    expect(fillPlaceholders('{{name}}/{{name}} {{other}} {x}', { name: 'a' })).toBe('a/a {{other}} {x}');
  });
});

describe('serveFnDependency', () => {
  it('writes a tarball relative to the project, as npm install does, and passes a range through', () => {
    const tarball = join(tmp, 'dist', 'serve-fn-0.1.0.tgz');
    mkdirSync(dirname(tarball), { recursive: true });
    writeFileSync(tarball, '');
    expect(serveFnDependency(tarball, join(tmp, 'apps', 'my-app'))).toBe('file:../../dist/serve-fn-0.1.0.tgz');
    expect(serveFnDependency(tarball, join(tmp, 'dist', 'my-app'))).toBe('file:../serve-fn-0.1.0.tgz');
    expect(serveFnDependency('^0.1.0', join(tmp, 'my-app'))).toBe('^0.1.0');
  });

  it('refuses a folder, which npm would rebuild on every install', () => {
    expect(() => serveFnDependency(tmp, join(tmp, 'my-app'))).toThrow(expect.objectContaining({ code: 'SF_ERR_NEW_SERVE_FN_FOLDER' }));
  });

  it('defaults to a range of this version, not a path', () => {
    expect(placeholdersFor('my-app').serveFn).toBe(`^${(JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version}`);
  });
});

describe('createProject', () => {
  it('fills placeholders in file names and text, renames gitignore, and copies models byte for byte', async () => {
    const result = await createProject({ dir: join(tmp, 'my-app'), template: 'basic', serveFn: '^9.9.9', templatesDir: fakeTemplates() });
    expect(result.files).toEqual(['.gitignore', 'model.onnx', 'package.json', join('src', 'my_app.model.ts')]);
    expect(readFileSync(join(tmp, 'my-app', 'src', 'my_app.model.ts'), 'utf8')).toBe('export class MyApp {} // my-app {{unknown}}');
    expect(JSON.parse(readFileSync(join(tmp, 'my-app', 'package.json'), 'utf8'))).toEqual({ name: 'my-app', dependencies: { 'serve-fn': '^9.9.9' } });
    expect(readFileSync(join(tmp, 'my-app', '.gitignore'), 'utf8')).toBe('node_modules/\n');
    expect([...readFileSync(join(tmp, 'my-app', 'model.onnx'))]).toEqual([0, 0xff, ...Buffer.from('{{name}}')]);
  });

  it('writes into an existing empty folder', async () => {
    mkdirSync(join(tmp, 'empty'));
    const result = await createProject({ dir: join(tmp, 'empty'), template: 'basic', templatesDir: fakeTemplates() });
    expect(result.files).toHaveLength(4);
  });

  it('refuses a folder that is not empty, and a file, without writing anything', async () => {
    const templatesDir = fakeTemplates();
    mkdirSync(join(tmp, 'busy'));
    writeFileSync(join(tmp, 'busy', 'keep.txt'), 'mine');
    writeFileSync(join(tmp, 'a-file'), 'mine');
    expect(await codeOf(createProject({ dir: join(tmp, 'busy'), template: 'basic', templatesDir }))).toBe('SF_ERR_NEW_TARGET_NOT_EMPTY');
    expect(await codeOf(createProject({ dir: join(tmp, 'a-file'), template: 'basic', templatesDir }))).toBe('SF_ERR_NEW_TARGET_NOT_EMPTY');
    expect(readFileSync(join(tmp, 'busy', 'keep.txt'), 'utf8')).toBe('mine');
  });

  it('refuses a template it does not offer, naming the ones it does', async () => {
    const err = await createProject({ dir: join(tmp, 'x'), template: 'grpc' }).catch((e: ServeFnError) => e);
    expect((err as ServeFnError).code).toBe('SF_ERR_NEW_TEMPLATE_UNKNOWN');
    expect((err as ServeFnError).message).toBe("No template named 'grpc': choose one of basic, onnx, streaming, npu, triton-repository.");
  });

  it.each(TEMPLATE_NAMES)('leaves no placeholder unfilled in the %s template', async (template) => {
    const result = await createProject({ dir: join(tmp, 'demo-app'), template, serveFn: 'file:/opt/serve-fn' });
    for (const file of result.files.filter((f) => !f.endsWith('.onnx'))) {
      expect(`${file}: ${readFileSync(join(tmp, 'demo-app', file), 'utf8')}`).not.toMatch(/\{\{\w+\}\}/);
    }
    const pkg = JSON.parse(readFileSync(join(tmp, 'demo-app', 'package.json'), 'utf8')) as { name: string; dependencies: Record<string, string> };
    expect(pkg.name).toBe('demo-app');
    expect(pkg.dependencies['serve-fn']).toBe('file:/opt/serve-fn');
    expect(result.files).toContain('.gitignore');
  });
});
