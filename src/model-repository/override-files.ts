import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
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
 * Bounds on a file parameter's path, so every path fits Linux's limits with room for the
 * temporary folder and the model name in front (PATH_MAX is 4096 bytes in all): NAME_MAX (255
 * bytes) per segment, 1024 bytes in all, and 32 folders deep, far more than any model layout
 * (`<version>/<file>`, `warmup/<file>`, a model.ts's assets) needs.
 */
export const MAX_OVERRIDE_SEGMENT_BYTES = 255;
export const MAX_OVERRIDE_PATH_BYTES = 1024;
export const MAX_OVERRIDE_DEPTH = 32;

/**
 * Writes the files of a Triton load request (`file:<version>/<name>` keys) into a fresh temporary
 * model folder, which then stands in for the model's folder, as Triton does with override files.
 * Every path must stay inside that folder: absolute paths, `..`, empty segments and backslashes
 * are refused, and so are paths past the bounds above. The folder is created empty for this load,
 * so no symbolic link in it can redirect a write, and `wx` refuses to write one file twice.
 */
export function writeOverrideFolder(model: string, files: Readonly<Record<string, Uint8Array>>): OverrideFolder {
  const paths = Object.keys(files).map((key) => [key, checkedPath(model, key)] as const);
  const root = mkdtempSync(join(tmpdir(), 'serve-fn-model-'));
  const dir = join(root, model);
  const remove = (): void => removeTree(root);
  try {
    mkdirSync(dir);
    for (const [key, path] of paths) {
      const target = join(dir, path);
      try {
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, files[key], { flag: 'wx' });
      } catch (err) {
        // Triton answers INTERNAL when it cannot write an override file (a file where another needs a folder, say), and its clients test for it.
        throw createError('SF_ERR_MODEL_FILES_UNWRITABLE', model, key, (err as Error).message, { cause: err });
      }
    }
  } catch (err) {
    remove();
    throw err;
  }
  return { dir, remove };
}

/**
 * Deletes a folder and everything in it, depth first with a stack of its own: Node 20's
 * `rmSync(…, { recursive: true })` recurses in JavaScript once per folder level, so a deep enough
 * tree overflows the call stack and is left behind. Symbolic links are removed, not followed.
 */
export function removeTree(root: string): void {
  const pending: { path: string; listed: boolean }[] = [{ path: root, listed: false }];
  while (pending.length > 0) {
    const top = pending[pending.length - 1];
    let isFolder: boolean;
    try {
      isFolder = lstatSync(top.path).isDirectory();
    } catch {
      pending.pop();
      continue;
    }
    if (!isFolder) {
      unlinkSync(top.path);
      pending.pop();
    } else if (!top.listed) {
      top.listed = true;
      for (const name of readdirSync(top.path)) pending.push({ path: join(top.path, name), listed: false });
    } else {
      rmdirSync(top.path);
      pending.pop();
    }
  }
}

function refused(model: string, key: string, why: string): ServeFnError {
  const shown = key.length > 80 ? `${key.slice(0, 80)}…` : key;
  return createError('SF_ERR_BAD_REQUEST', `load of '${model}': file parameter '${shown}' ${why}; name files like 'file:1/model.onnx', inside the model folder`);
}

function checkedPath(model: string, key: string): string {
  if (!key.startsWith(FILE_PREFIX)) throw refused(model, key, `does not start with '${FILE_PREFIX}'`);
  const path = key.slice(FILE_PREFIX.length);
  if (path === '' || isAbsolute(path) || /^[a-zA-Z]:/.test(path)) throw refused(model, key, 'is not a relative path');
  if (path.includes('\\') || path.includes('\0')) throw refused(model, key, 'contains a backslash or NUL character');
  if (Buffer.byteLength(path) > MAX_OVERRIDE_PATH_BYTES) throw refused(model, key, `is longer than ${MAX_OVERRIDE_PATH_BYTES} bytes`);
  const segments = path.split('/');
  if (segments.length > MAX_OVERRIDE_DEPTH) throw refused(model, key, `is more than ${MAX_OVERRIDE_DEPTH} levels deep`);
  if (segments.some((s) => s === '' || s === '.' || s === '..')) throw refused(model, key, "has an empty, '.' or '..' segment");
  if (segments.some((s) => Buffer.byteLength(s) > MAX_OVERRIDE_SEGMENT_BYTES)) throw refused(model, key, `has a name longer than ${MAX_OVERRIDE_SEGMENT_BYTES} bytes`);
  return segments.join(sep);
}
