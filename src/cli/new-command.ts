import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createError } from '../errors/index.js';

/** The templates `serve-fn new` offers, each a folder of `templates/`. */
export const TEMPLATE_NAMES = ['basic', 'onnx', 'streaming', 'npu', 'triton-repository'] as const;

const DEFAULT_TEMPLATES_DIR = fileURLToPath(new URL('../../templates/', import.meta.url));

const PACKAGE = createRequire(import.meta.url)('../../package.json') as { version: string };

/**
 * What generated projects depend on unless `--serve-fn` says otherwise: a range of this version,
 * which a project keeps on any machine and in CI. Until serve-fn is on npm, `--serve-fn` names the
 * tarball `npm pack` makes (docs/install.md).
 */
export const DEFAULT_SERVE_FN_SPEC = `^${PACKAGE.version}`;

export interface NewProjectOptions {
  readonly dir: string;
  readonly template: string;
  /** npm dependency spec for serve-fn: a version range, or `file:<tarball>` relative to the project. */
  readonly serveFn?: string;
  readonly templatesDir?: string;
}

export interface NewProjectResult {
  readonly dir: string;
  readonly placeholders: Readonly<Record<string, string>>;
  /** Written files, relative to `dir`, sorted. */
  readonly files: readonly string[];
}

// Files that are copied byte for byte: filling placeholders would corrupt a model.
const BINARY_FILE = /\.(onnx|om)$/;

// npm publishes no `.gitignore` (it would become `.npmignore`), so templates ship it as `gitignore`.
const RENAMED_FILES: Readonly<Record<string, string>> = { gitignore: '.gitignore' };

const PLACEHOLDER = /\{\{(\w+)\}\}/g;

function words(name: string): string[] {
  return name.split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0);
}

/** The values for `{{name}}`, `{{modelName}}`, `{{className}}` and `{{serveFn}}`, from the folder name. */
export function placeholdersFor(dir: string, serveFn = DEFAULT_SERVE_FN_SPEC): Record<string, string> {
  const parts = words(basename(resolve(dir))).map((w) => w.toLowerCase());
  const list = parts.length > 0 ? parts : ['model'];
  const className = list.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
  return {
    name: list.join('-'),
    modelName: list.join('_'),
    // A class name cannot start with a digit.
    className: /^[0-9]/.test(className) ? `Model${className}` : className,
    serveFn,
  };
}

/** Replaces each `{{key}}` whose key is in `values`; other braces are left as they are. */
export function fillPlaceholders(text: string, values: Readonly<Record<string, string>>): string {
  return text.replace(PLACEHOLDER, (whole, key: string) => values[key] ?? whole);
}

async function listFiles(root: string, dir = root): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) => (e.isDirectory() ? listFiles(root, join(dir, e.name)) : Promise.resolve([relative(root, join(dir, e.name))]))),
  );
  return nested.flat();
}

function targetPath(templatePath: string, values: Readonly<Record<string, string>>): string {
  const segments = templatePath.split(/[\\/]/).map((s) => RENAMED_FILES[s] ?? fillPlaceholders(s, values));
  return join(...segments);
}

/**
 * `--serve-fn` takes a range or spec as npm does, or the path of a tarball, written relative to the
 * project as `npm install <tarball>` writes it, so the project and the tarball move together.
 * A folder is refused: npm links it and runs its prepare and install scripts on every install.
 */
export function serveFnDependency(value: string, projectDir: string): string {
  if (!existsSync(value)) return value;
  if (statSync(value).isDirectory()) throw createError('SF_ERR_NEW_SERVE_FN_FOLDER', value);
  const path = relative(resolve(projectDir), resolve(value)).split(sep).join('/');
  return `file:${path.startsWith('.') ? path : `./${path}`}`;
}

/** Copies `templates/<template>` into `dir` (new or empty), filling placeholders in names and text. */
export async function createProject(options: NewProjectOptions): Promise<NewProjectResult> {
  const templatesDir = options.templatesDir ?? DEFAULT_TEMPLATES_DIR;
  const source = join(templatesDir, options.template);
  if (!(TEMPLATE_NAMES as readonly string[]).includes(options.template) || !existsSync(source)) {
    throw createError('SF_ERR_NEW_TEMPLATE_UNKNOWN', options.template, TEMPLATE_NAMES.join(', '));
  }
  const dir = resolve(options.dir);
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0)) {
    throw createError('SF_ERR_NEW_TARGET_NOT_EMPTY', options.dir);
  }
  const placeholders = placeholdersFor(dir, options.serveFn);
  const written: string[] = [];
  for (const file of await listFiles(source)) {
    const target = targetPath(file, placeholders);
    const bytes = await readFile(join(source, file));
    const content = BINARY_FILE.test(file) ? bytes : fillPlaceholders(bytes.toString('utf8'), placeholders);
    await mkdir(join(dir, target, '..'), { recursive: true });
    await writeFile(join(dir, target), content);
    written.push(target);
  }
  return { dir, placeholders, files: written.sort() };
}

/** `serve-fn new <dir> --template <name>`: writes the project and prints what to do next. */
export async function newCommand(dir: string, options: { template: string; serveFn: string }): Promise<void> {
  const result = await createProject({ dir, template: options.template, serveFn: serveFnDependency(options.serveFn, dir) });
  const serveTarget = options.template === 'triton-repository' ? ' models' : '';
  const lines = [
    `Created ${result.placeholders.name} from the ${options.template} template in ${result.dir}:`,
    ...result.files.map((f) => `  ${f}`),
    '',
    'Next steps:',
    `  cd ${relative(process.cwd(), result.dir) || '.'}`,
    '  npm install',
    '  npm test',
    `  npx serve-fn dev${serveTarget}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
