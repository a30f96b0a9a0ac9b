import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { exportedModelClasses } from '../definition/definition-builder.js';
import type { ModelClass } from '../definition/model-definition.js';
import { createError } from '../errors/index.js';
import { isModelRepository } from '../model-repository/repository-scan.js';
import { isTextModelFolder } from '../text/model-folder.js';
import { isGenerativeFolder } from '../generation/generative-folder.js';
import { isGgufFile } from '../generation/gguf/gguf-file.js';
import { isSpeechFolder } from '../speech/speech-folder.js';
import { isDiffusionFolder } from '../diffusion/pipeline-folder.js';
import type { RepositoryServeOptions, ServeOptions } from '../serve-fn-server.js';

export const FOLDER_ENTRIES = ['serve-fn.config.ts', 'serve-fn.config.js', 'index.ts', 'index.js'];

export interface DiscoveredEntry {
  /** The module file that exports the model classes (imported again by every worker). */
  readonly file: string;
  readonly moduleUrl: string;
  /** Folder watched by `serve-fn dev`. */
  readonly root: string;
}

/** Finds the entry module: a file, or a folder holding serve-fn.config.ts or index.ts. */
export function findEntry(path = '.'): DiscoveredEntry {
  const target = resolve(path);
  if (!existsSync(target)) throw createError('SF_ERR_ENTRY_NOT_FOUND', path);
  if (statSync(target).isFile()) return { file: target, moduleUrl: pathToFileURL(target).href, root: dirname(target) };
  for (const name of FOLDER_ENTRIES) {
    const file = join(target, name);
    if (existsSync(file)) return { file, moduleUrl: pathToFileURL(file).href, root: target };
  }
  throw createError('SF_ERR_ENTRY_NOT_FOUND', path);
}

/** A Triton model repository to serve: a folder with no entry file whose subfolders hold models. */
export function findRepository(path = '.'): string | undefined {
  const target = resolve(path);
  // A missing path or a file has no entry files, and isModelRepository answers false for it.
  if (FOLDER_ENTRIES.some((name) => existsSync(join(target, name)))) return undefined;
  return isModelRepository(target) ? target : undefined;
}

/** Imports the entry and collects every exported @Model class (and a default `{ models }` list). */
export async function loadModels(entry: DiscoveredEntry): Promise<ModelClass[]> {
  const found = exportedModelClasses((await import(entry.moduleUrl)) as Record<string, unknown>);
  if (found.length === 0) throw createError('SF_ERR_ENTRY_NO_MODELS', entry.file);
  return found;
}

/**
 * Text model folders to serve at `path`: the folder itself when it is a sentence-transformers /
 * optimum export, or its subfolders that are (a parent folder of models); undefined otherwise.
 */
export function findTextModelFolders(path = '.'): string[] | undefined {
  const target = resolve(path);
  if (!existsSync(target) || !statSync(target).isDirectory() || FOLDER_ENTRIES.some((name) => existsSync(join(target, name)))) return undefined;
  // A decoder export also has config.json + tokenizer.json + model.onnx: it is a generative folder, not a text one.
  const isText = (dir: string): boolean => isTextModelFolder(dir) && !isGenerativeFolder(dir);
  if (isGenerativeFolder(target)) return undefined;
  if (isText(target)) return [target];
  const children = readdirSync(target, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(target, d.name)).filter(isText).sort();
  return children.length > 0 ? children : undefined;
}

/** Generative model folders to serve at `path` (decoder exports, generation/generative-folder.ts): the folder itself, or its subfolders that are; undefined otherwise. */
export function findGenerativeFolders(path = '.'): string[] | undefined {
  const target = resolve(path);
  if (!existsSync(target) || !statSync(target).isDirectory() || FOLDER_ENTRIES.some((name) => existsSync(join(target, name)))) return undefined;
  if (isGenerativeFolder(target)) return [target];
  const children = readdirSync(target, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(target, d.name)).filter(isGenerativeFolder).sort();
  return children.length > 0 ? children : undefined;
}

/** GGUF files to serve at `path` (llama-server's `-m model.gguf`): the file itself, or the `.gguf` files in the folder; undefined otherwise. */
export function findGgufFiles(path = '.'): string[] | undefined {
  const target = resolve(path);
  if (isGgufFile(target)) return [target];
  if (!existsSync(target) || !statSync(target).isDirectory() || FOLDER_ENTRIES.some((name) => existsSync(join(target, name)))) return undefined;
  const files = readdirSync(target, { withFileTypes: true }).filter((d) => d.isFile()).map((d) => join(target, d.name)).filter(isGgufFile).sort();
  return files.length > 0 ? files : undefined;
}

/**
 * FunASR export folders to serve at `path` (config.yaml naming a FunASR model): the folder itself,
 * or its subfolders that are (a folder of folders, as FunASR's 2pass server is given its models);
 * undefined otherwise.
 */
export function findSpeechFolders(path = '.'): string[] | undefined {
  const target = resolve(path);
  if (!existsSync(target) || !statSync(target).isDirectory() || FOLDER_ENTRIES.some((name) => existsSync(join(target, name)))) return undefined;
  if (isSpeechFolder(target)) return [target];
  const children = readdirSync(target, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(target, d.name)).filter(isSpeechFolder).sort();
  return children.length > 0 ? children : undefined;
}

/**
 * Diffusers pipeline folders to serve at `path` (model_index.json): the folder itself, or its
 * subfolders that are; undefined otherwise. Looked for before text folders.
 */
export function findDiffusionFolders(path = '.'): string[] | undefined {
  const target = resolve(path);
  if (!existsSync(target) || !statSync(target).isDirectory() || FOLDER_ENTRIES.some((name) => existsSync(join(target, name)))) return undefined;
  if (isDiffusionFolder(target)) return [target];
  const children = readdirSync(target, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(target, d.name)).filter(isDiffusionFolder).sort();
  return children.length > 0 ? children : undefined;
}

/**
 * What `start`, `dev` and `openapi` serve at `paths`: model folders served with no code (text,
 * generative, GGUF files, speech, diffusion pipelines; one or several, or parent folders of them),
 * a Triton model repository folder, or an entry module's models. Only no-code folders come several
 * at a time.
 */
export async function modelsToServe(paths: string | readonly string[] | undefined, repository: Omit<RepositoryServeOptions, 'root'> = {}): Promise<Pick<ServeOptions, 'models' | 'moduleUrl' | 'repository' | 'textFolders' | 'generativeFolders' | 'ggufFiles' | 'speechFolders' | 'diffusionFolders' | 'modelControlMode'>> {
  const all = paths === undefined ? ['.'] : typeof paths === 'string' ? [paths] : paths.length === 0 ? ['.'] : paths;
  // Without a repository folder, the control mode still says how load and unload requests are answered.
  const modelControlMode = repository.controlMode;
  const speechFolders = all.map((p) => findSpeechFolders(p));
  const diffusionFolders = all.map((p) => findDiffusionFolders(p));
  // A diffusers pipeline folder holds tokenizer and model files a text folder check could take for its own.
  const textFolders = all.map((p, i) => (diffusionFolders[i] ? undefined : findTextModelFolders(p)));
  const generativeFolders = all.map((p) => findGenerativeFolders(p));
  const ggufFiles = all.map((p) => findGgufFiles(p));
  if (all.every((_, i) => textFolders[i] !== undefined || generativeFolders[i] !== undefined || ggufFiles[i] !== undefined || speechFolders[i] !== undefined || diffusionFolders[i] !== undefined)) {
    const generative = generativeFolders.flatMap((found) => found ?? []);
    const gguf = ggufFiles.flatMap((found) => found ?? []);
    const speech = speechFolders.flatMap((found) => found ?? []);
    const diffusion = diffusionFolders.flatMap((found) => found ?? []);
    return {
      models: [], textFolders: textFolders.flatMap((found) => found ?? []), modelControlMode,
      ...(generative.length > 0 ? { generativeFolders: generative } : {}), ...(gguf.length > 0 ? { ggufFiles: gguf } : {}), ...(speech.length > 0 ? { speechFolders: speech } : {}), ...(diffusion.length > 0 ? { diffusionFolders: diffusion } : {}),
    };
  }
  if (all.length > 1) {
    const other = all.find((_, i) => textFolders[i] === undefined && generativeFolders[i] === undefined && ggufFiles[i] === undefined && speechFolders[i] === undefined && diffusionFolders[i] === undefined)!;
    throw createError('SF_ERR_ENTRY_NOT_FOUND', `${other} (several paths are served only when each is a model folder served with no code, or a folder of them)`);
  }
  const path = all[0];
  const root = findRepository(path);
  if (root) return { models: [], repository: { ...repository, root } };
  const entry = findEntry(path);
  return { models: await loadModels(entry), moduleUrl: entry.moduleUrl, modelControlMode };
}
