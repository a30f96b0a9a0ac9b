import { existsSync, lstatSync, readdirSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { createError } from '../errors/index.js';

/**
 * Reading a Triton model repository's layout: model folders, their numeric version folders, and a
 * fingerprint of each model folder so polling can tell which models changed.
 */

/** Triton ignores version folders that are not numbers or that start with 0. */
const VERSION_FOLDER = /^[1-9]\d*$/;

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The model folders of a repository (symbolic links to folders count, as in Triton), sorted. */
export function listModelFolders(root: string): string[] {
  if (!isDirectory(root)) throw createError('SF_ERR_REPOSITORY_INVALID', root, 'it is not a folder');
  return readdirSync(root)
    .filter((name) => !name.startsWith('.') && isDirectory(join(root, name)))
    .sort();
}

/** Version numbers of a model folder, ascending. */
export function listVersions(modelDir: string): number[] {
  return readdirSync(modelDir)
    .filter((name) => VERSION_FOLDER.test(name) && isDirectory(join(modelDir, name)))
    .map(Number)
    .sort((a, b) => a - b);
}

/**
 * `name` joined to `folder` when the result stays inside it, else undefined (Triton
 * CVE-2023-31036: a load request's config must not reach files outside the model). The check is
 * on the path as written: a request can name any path, while links in a folder are put there by
 * whoever owns the repository (override folders are written fresh and hold none).
 */
export function pathInside(folder: string, name: string): string | undefined {
  if (name === '' || isAbsolute(name) || name.includes('\0')) return undefined;
  const path = join(folder, name);
  const rel = relative(folder, path);
  return rel !== '' && rel.split(sep)[0] !== '..' && !isAbsolute(rel) ? path : undefined;
}

/** A folder whose subfolders hold a config.pbtxt or numeric version folders. */
export function isModelRepository(path: string): boolean {
  if (!isDirectory(path)) return false;
  return listModelFolders(path).some((name) => {
    const dir = join(path, name);
    return existsSync(join(dir, 'config.pbtxt')) || listVersions(dir).length > 0;
  });
}

/**
 * Every file and folder under `dir` with its size and modification time; equal fingerprints mean
 * nothing was added, removed or rewritten. Links are described, not followed.
 */
export function folderFingerprint(dir: string): string {
  const entries: string[] = [];
  const walk = (current: string): void => {
    for (const name of readdirSync(current).sort()) {
      const path = join(current, name);
      const stat = lstatSync(path);
      entries.push(`${relative(dir, path)}:${stat.isDirectory() ? 'dir' : stat.size}:${stat.mtimeMs}`);
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(dir);
  return entries.join('\n');
}
