import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, sep } from 'node:path';
import { createError, type ServeFnError } from '../errors/index.js';

export interface OverrideFolder {
  /** The model folder holding the written files: `<temporary folder>/<model name>`. */
  readonly dir: string;
  /** Deletes the temporary folder. */
  remove(): void;
}

const FILE_PREFIX = 'file:';

/**
 * Writes the files of a Triton load request (`file:<version>/<name>` keys) into a fresh temporary
 * model folder, which then stands in for the model's folder, as Triton does with override files.
 * Every path must stay inside that folder: absolute paths, `..`, empty segments and backslashes
 * are refused. The folder is created empty for this load, so no symbolic link in it can redirect a
 * write, and `wx` refuses to write one file twice.
 */
export function writeOverrideFolder(model: string, files: Readonly<Record<string, Uint8Array>>): OverrideFolder {
  const paths = Object.keys(files).map((key) => [key, checkedPath(model, key)] as const);
  const root = mkdtempSync(join(tmpdir(), 'serve-fn-model-'));
  const dir = join(root, model);
  const remove = (): void => rmSync(root, { recursive: true, force: true });
  try {
    mkdirSync(dir);
    for (const [key, path] of paths) {
      const target = join(dir, path);
      try {
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, files[key], { flag: 'wx' });
      } catch (err) {
        // Triton answers INTERNAL when it cannot write an override file (a name over NAME_MAX, say), and its clients test for it.
        throw createError('SF_ERR_MODEL_FILES_UNWRITABLE', model, key, (err as Error).message, { cause: err });
      }
    }
  } catch (err) {
    remove();
    throw err;
  }
  return { dir, remove };
}

function refused(model: string, key: string, why: string): ServeFnError {
  return createError('SF_ERR_BAD_REQUEST', `load of '${model}': file parameter '${key}' ${why}; name files like 'file:1/model.onnx', inside the model folder`);
}

function checkedPath(model: string, key: string): string {
  if (!key.startsWith(FILE_PREFIX)) throw refused(model, key, `does not start with '${FILE_PREFIX}'`);
  const path = key.slice(FILE_PREFIX.length);
  if (path === '' || isAbsolute(path) || /^[a-zA-Z]:/.test(path)) throw refused(model, key, 'is not a relative path');
  if (path.includes('\\') || path.includes('\0')) throw refused(model, key, 'contains a backslash or NUL character');
  const segments = path.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) throw refused(model, key, "has an empty, '.' or '..' segment");
  return segments.join(sep);
}
