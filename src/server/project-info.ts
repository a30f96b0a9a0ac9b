import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** How the OpenAPI document and Swagger UI name the app. */
export interface ProjectInfo {
  readonly title: string;
  readonly version: string;
}

/** FastAPI's version for an app that names none. */
const DEFAULT_VERSION = '0.1.0';

/**
 * The app's name and version, as a FastAPI app's `title` and `version`: those of the entry module's
 * default export (`export default { models, title, version }`, as in a serve-fn.config.ts), else
 * `name` and `version` of the nearest package.json at or above the project folder, else the
 * folder's name. The project folder is the entry module's folder, the repository root, or the
 * working directory for a server built in code.
 */
export async function readProjectInfo(source: { readonly moduleUrl?: string; readonly folder?: string }): Promise<ProjectInfo> {
  const folder = source.moduleUrl ? dirname(fileURLToPath(source.moduleUrl)) : (source.folder ?? process.cwd());
  const declared = source.moduleUrl ? await declaredInfo(source.moduleUrl) : {};
  const pkg = nearestPackage(folder);
  return {
    title: declared.title ?? pkg?.name ?? basename(folder),
    version: declared.version ?? pkg?.version ?? DEFAULT_VERSION,
  };
}

/** The entry was imported already to find its models, so this reads it from the module cache. */
async function declaredInfo(moduleUrl: string): Promise<Partial<ProjectInfo>> {
  const config = ((await import(moduleUrl)) as { default?: unknown }).default;
  if (config === null || typeof config !== 'object') return {};
  const { title, version } = config as Record<string, unknown>;
  return { ...(typeof title === 'string' ? { title } : {}), ...(typeof version === 'string' ? { version } : {}) };
}

function nearestPackage(folder: string): { name?: string; version?: string } | undefined {
  for (let dir = folder; ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const { name, version } = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      return { ...(typeof name === 'string' ? { name } : {}), ...(typeof version === 'string' ? { version } : {}) };
    }
    if (dirname(dir) === dir) return undefined;
  }
}
