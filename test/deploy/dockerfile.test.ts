import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DockerfileParser, type Dockerfile, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import semver from 'semver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStartArguments } from './start-command-arguments.js';

const root = new URL('../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');
const text = read('Dockerfile');
const dockerfile: Dockerfile = DockerfileParser.parse(text);
const packageJson = JSON.parse(read('package.json')) as { scripts: Record<string, string> };

interface Stage {
  readonly name: string | null;
  /** The FROM image with build arguments resolved to their defaults. */
  readonly image: string;
  readonly instructions: readonly Instruction[];
}

/**
 * Instructions grouped by the FROM that starts their stage. A stage built FROM an earlier stage
 * inherits that stage's image and instructions, as the image it builds does.
 */
function stages(): Stage[] {
  const found: Stage[] = [];
  for (const instruction of dockerfile.getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const from = dockerfile.getFROMs().find((f) => f.getRange().start.line === instruction.getRange().start.line)!;
      const image = resolve(from.getImage() ?? '', instruction);
      const parent = found.find((s) => s.name === image);
      found.push({ name: from.getBuildStage(), image: parent?.image ?? image, instructions: [...(parent?.instructions ?? [])] });
    } else if (found.length > 0) {
      (found.at(-1)!.instructions as Instruction[]).push(instruction);
    }
  }
  return found;
}

/** Replaces `${NAME}` with the value the Dockerfile gives NAME at that instruction (ARG defaults included). */
function resolve(value: string, at: Instruction): string {
  return value.replace(/\$\{(\w+)\}/g, (_, name: string) => {
    const line = at.getRange().start.line;
    const resolved = dockerfile.resolveVariable(name, line) ?? dockerfile.getInitialARGs().find((a) => a.getProperty()?.getName() === name)?.getProperty()?.getValue();
    if (resolved == null) throw new Error(`\${${name}} has no value at line ${line + 1}`);
    return resolved;
  });
}

function stage(name: string): Stage {
  const found = stages().find((s) => s.name === name);
  if (!found) throw new Error(`no stage ${name}`);
  return found;
}

const argumentsOf = (instruction: Instruction): string[] => instruction.getArguments().map((a) => a.getValue());
const all = (s: Stage, keyword: string): Instruction[] => s.instructions.filter((i) => i.getKeyword() === keyword);
const runs = (s: Stage): string[] => all(s, 'RUN').map((i) => argumentsOf(i).join(' '));

/** `COPY [--from=x] src... dest` as its parts. */
function copies(s: Stage): { from: string | undefined; sources: string[]; destination: string }[] {
  return dockerfile
    .getCOPYs()
    .filter((copy) => s.instructions.includes(copy))
    .map((copy) => {
      const args = argumentsOf(copy);
      return { from: copy.getFromFlag()?.getValue() ?? undefined, sources: args.slice(0, -1), destination: args.at(-1)! };
    });
}

/** The JSON array of an exec-form instruction (`ENTRYPOINT ["a", "b"]`), after an optional subcommand such as CMD. */
function execForm(instruction: Instruction, after = ''): string[] {
  const content = instruction.getArgumentsContent() ?? '';
  return JSON.parse(content.slice(content.indexOf(after) + after.length).trim()) as string[];
}

describe('Dockerfile lint', () => {
  it('has no errors or warnings from dockerfile-utils', () => {
    expect(validate(text)).toEqual([]);
  });

  it('is checked by a linter that does report problems', () => {
    const broken = 'FROM node:20 AS build\nHEALTHCHECK --interval=ten CMD true\nUSER\n';
    expect(validate(broken).map((d) => d.message)).toEqual(['time: invalid duration ten', 'Instruction has no arguments']);
  });
});

describe('Dockerfile stages', () => {
  it('builds in a full Node image and runs in the slim one, of a Node LTS line that engines.node accepts, with the production image last (the default target)', () => {
    expect(stages().map((s) => [s.name, s.image])).toEqual([
      ['build', 'node:24-bookworm'],
      ['production-modules', 'node:24-bookworm'],
      ['example-modules', 'node:24-bookworm'],
      ['server', 'node:24-bookworm-slim'],
      ['examples', 'node:24-bookworm-slim'],
      ['runtime', 'node:24-bookworm-slim'],
    ]);
    const { engines } = JSON.parse(read('package.json')) as { engines: { node: string } };
    for (const s of stages()) expect(semver.satisfies(`${s.image.match(/^node:(\d+)-/)![1]}.99.0`, engines.node), s.image).toBe(true);
  });

  it('installs, compiles TypeScript and the native addon in the build stage, then drops dev dependencies for production', () => {
    const build = stage('build');
    expect(runs(build)).toEqual(['npm ci --ignore-scripts --no-audit --no-fund', 'npm run build && npm run build:native && npm pkg delete devDependencies.onnxruntime-node']);
    expect(runs(stage('production-modules')).slice(runs(build).length)).toEqual(['npm prune --omit=dev --ignore-scripts']);
    expect(packageJson.scripts.build).toMatch(/^tsc -p tsconfig\.build\.json( |$)/);
    expect(packageJson.scripts['build:native']).toBe('node-gyp rebuild --directory native');
  });

  it('gives the runtime stage only build outputs, production modules and the CLI', () => {
    const fromBuild = copies(stage('runtime')).filter((c) => c.from === 'build').flatMap((c) => c.sources);
    expect(fromBuild).toEqual(['/usr/local/bin/node', '/opt/serve-fn/package.json', '/opt/serve-fn/dist', '/opt/serve-fn/native/build/Release/serve_fn_npu.node']);
    expect(copies(stage('runtime')).filter((c) => c.from === 'production-modules')).toEqual([{ from: 'production-modules', sources: ['/opt/serve-fn/node_modules'], destination: './node_modules' }]);
    expect(copies(stage('runtime')).filter((c) => c.from === undefined).flatMap((c) => c.sources)).toEqual(['bin', 'loader']);
    expect(runs(stage('runtime')).some((r) => r.includes('npm '))).toBe(false);
  });

  it('puts the addon where binding.gyp builds it and the NPU backend loads it', () => {
    // A .gyp file is JSON plus Python-style comment lines.
    const gyp = JSON.parse(read('native/binding.gyp').replace(/^\s*#.*$/gm, '')) as { targets: { target_name: string }[] };
    const addon = copies(stage('runtime')).find((c) => c.sources[0].endsWith('.node'))!;
    expect(addon.destination).toBe(`./native/build/Release/${gyp.targets[0].target_name}.node`);
    expect(argumentsOf(all(stage('runtime'), 'WORKDIR')[0])).toEqual(['/opt/serve-fn']);
  });
});

describe('Dockerfile runtime', () => {
  const runtime = (): Stage => stage('runtime');

  it('runs as a numeric non-root user that it creates', () => {
    const users = all(runtime(), 'USER');
    expect(users).toHaveLength(1);
    const user = resolve(argumentsOf(users[0])[0], users[0]);
    expect(user).toBe('10001:10001');
    expect(runs(runtime())[0]).toContain('useradd --system --uid "${SERVE_FN_UID}"');
    const last = runtime().instructions.filter((i) => ['USER', 'RUN'].includes(i.getKeyword())).at(-1)!;
    expect(last.getKeyword()).toBe('USER');
  });

  it('exposes HTTP 8000 and gRPC 8001, and is configured by environment', () => {
    expect(all(runtime(), 'EXPOSE').flatMap(argumentsOf)).toEqual(['8000', '8001']);
    const env = Object.fromEntries(
      dockerfile.getENVs().filter((e) => runtime().instructions.includes(e)).flatMap((e) => e.getProperties().map((p) => [p.getName(), p.getValue()])),
    );
    expect(env).toEqual({ NODE_ENV: 'production', SERVE_FN_HOST: '0.0.0.0', SERVE_FN_PORT: '8000', SERVE_FN_LOG_LEVEL: 'info' });
  });

  it('starts `serve-fn start /models`, which the CLI accepts, through a serve-fn on the PATH', async () => {
    const [entrypoint] = all(runtime(), 'ENTRYPOINT');
    const [cmd] = all(runtime(), 'CMD');
    const command = [...execForm(entrypoint), ...execForm(cmd)];
    expect(command).toEqual(['serve-fn', 'start', '/models']);
    const parsed = await parseStartArguments(command.slice(2));
    expect(parsed).toMatchObject({ entries: ['/models'], gracePeriod: 30_000 });
    expect(runs(runtime()).join('\n')).toContain('ln -s /opt/serve-fn/bin/serve-fn.js /usr/local/bin/serve-fn');
    expect(runs(runtime())[0]).toContain('mkdir -p /models');
    expect(existsSync(new URL('bin/serve-fn.js', root))).toBe(true);
  });
});

describe('Dockerfile HEALTHCHECK', () => {
  const healthchecks = dockerfile.getHEALTHCHECKs();
  const probe = execForm(healthchecks[0], 'CMD');
  const run = promisify(execFile);

  /** Runs the image's health check command with `env`; resolves with its exit code. */
  async function check(env: Record<string, string>): Promise<number> {
    expect(probe.slice(0, 2)).toEqual(['node', '-e']);
    try {
      await run(process.execPath, probe.slice(1), { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 10_000 });
      return 0;
    } catch (err) {
      return (err as { code: number }).code;
    }
  }

  let dir: string;
  const seen: { url?: string; authorization?: string }[] = [];
  let status = 200;
  const handler = (request: IncomingMessage, response: ServerResponse): void => {
    seen.push({ url: request.url, authorization: request.headers.authorization });
    response.writeHead(request.url === '/v2/health/ready' ? status : 404).end();
  };
  const servers: Server[] = [];
  const listen = async (server: Server): Promise<number> => {
    servers.push(server);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return (server.address() as AddressInfo).port;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'serve-fn-healthcheck-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'),
      '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=serve-fn.example'], { stdio: 'pipe' });
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((done) => s.close(done))));
    rmSync(dir, { recursive: true, force: true });
  });

  it('is the only one, with an interval, timeout, start period and retries', () => {
    expect(healthchecks).toHaveLength(1);
    expect(healthchecks[0].getFlags().map((f) => [f.getName(), f.getValue()])).toEqual([
      ['interval', '10s'],
      ['timeout', '5s'],
      ['start-period', '60s'],
      ['retries', '3'],
    ]);
  });

  it('exits 0 when /v2/health/ready answers 200 and 1 otherwise, on SERVE_FN_PORT', async () => {
    const port = await listen(createHttpServer(handler));
    seen.length = 0;
    status = 200;
    expect(await check({ SERVE_FN_PORT: String(port) })).toBe(0);
    status = 400;
    expect(await check({ SERVE_FN_PORT: String(port) })).toBe(1);
    expect(seen).toEqual([
      { url: '/v2/health/ready', authorization: undefined },
      { url: '/v2/health/ready', authorization: undefined },
    ]);
    const closed = createHttpServer();
    const unused = await listen(closed);
    await new Promise((done) => closed.close(done));
    expect(await check({ SERVE_FN_PORT: String(unused) })).toBe(1);
  });

  it('sends the API key when one is set', async () => {
    const port = await listen(createHttpServer(handler));
    seen.length = 0;
    status = 200;
    expect(await check({ SERVE_FN_PORT: String(port), SERVE_FN_API_KEY: 'k-1' })).toBe(0);
    expect(seen).toEqual([{ url: '/v2/health/ready', authorization: 'Bearer k-1' }]);
  });

  it('speaks HTTPS to a self-signed certificate when TLS is on', async () => {
    const tls = { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };
    const port = await listen(createHttpsServer(tls, handler));
    status = 200;
    expect(await check({ SERVE_FN_PORT: String(port), SERVE_FN_TLS_CERT: join(dir, 'cert.pem') })).toBe(0);
    expect(await check({ SERVE_FN_PORT: String(port) })).toBe(1);
  });
});

describe('.dockerignore', () => {
  const patterns = read('.dockerignore')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  /**
   * Docker's rule, last matching pattern wins, for the pattern forms this file uses: `*` and
   * literal paths (a directory pattern covers what is inside it). Anything else is refused so the
   * test cannot silently misread a new pattern.
   */
  function included(path: string): boolean {
    let keep = true;
    for (const pattern of patterns) {
      const negated = pattern.startsWith('!');
      const body = (negated ? pattern.slice(1) : pattern).replace(/\/$/, '');
      if (/[?[\]\\]|\*./.test(body)) throw new Error(`.dockerignore pattern '${pattern}' needs a fuller matcher`);
      const matches = body === '*' || path === body || path.startsWith(`${body}/`);
      if (matches) keep = negated;
    }
    return keep;
  }

  it('sends every file the Dockerfile copies from the context', () => {
    const fromContext = stages().flatMap((s) => copies(s).filter((c) => c.from === undefined).flatMap((c) => c.sources));
    expect(new Set(fromContext)).toEqual(new Set(['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'native', 'bin', 'loader', 'examples']));
    for (const path of [...fromContext, 'src/server/security-plugin.ts', 'native/binding.gyp', 'native/src/addon.cc', 'examples/ocr/index.ts']) expect(included(path), path).toBe(true);
  });

  it('keeps local builds, dependencies, tests and secrets out', () => {
    for (const path of ['node_modules', 'node_modules/fastify/package.json', 'dist/index.js', 'native/build/Release/serve_fn_npu.node', '.git', 'test', '.env']) {
      expect(included(path), path).toBe(false);
    }
  });
});

describe('Dockerfile examples target', () => {
  const examples = (): Stage => stage('examples');
  const examplePackages = (): string[] => {
    const arg = dockerfile.getARGs().find((a) => a.getProperty()?.getName() === 'EXAMPLE_PACKAGES')!;
    return arg.getProperty()!.getValue()!.replace(/^"|"$/g, '').split(/\s+/);
  };

  /** Packages named by an import, a dynamic import or a require.resolve in examples/. */
  function packagesTheExamplesImport(): Set<string> {
    const files = readdirSync(new URL('examples/', root), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const specifiers = files.flatMap((file) => [...read(`examples/${file}`).matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bresolve\(\s*)'([^'./][^']*)'/g)].map((m) => m[1]!));
    return new Set(specifiers.filter((s) => !isBuiltin(s)).map((s) => s.split('/').slice(0, s.startsWith('@') ? 2 : 1).join('/')));
  }

  it('is the production image plus the examples and their packages, and serves examples/', async () => {
    const server = stage('server');
    expect(examples().instructions.slice(0, server.instructions.length)).toEqual(server.instructions);
    const own = examples().instructions.slice(server.instructions.length);
    expect(own.map((i) => i.getKeyword())).toEqual(['COPY', 'COPY', 'CMD']);
    expect(copies(examples()).filter((c) => c.from === 'example-modules')).toEqual([{ from: 'example-modules', sources: ['/opt/serve-fn/node_modules'], destination: './node_modules' }]);
    expect(copies(examples()).filter((c) => c.from === undefined).at(-1)).toEqual({ from: undefined, sources: ['examples'], destination: './examples' });
    const command = [...execForm(all(examples(), 'ENTRYPOINT').at(-1)!), ...execForm(all(examples(), 'CMD').at(-1)!)];
    expect(command).toEqual(['serve-fn', 'start', '/opt/serve-fn/examples']);
    expect(await parseStartArguments(command.slice(2))).toMatchObject({ entries: ['/opt/serve-fn/examples'] });
    expect(existsSync(new URL('examples/index.ts', root))).toBe(true);
  });

  it('keeps, beside the production dependencies, exactly the devDependencies that the examples import', () => {
    const lockfile = JSON.parse(read('package-lock.json')) as { packages: Record<string, { dev?: boolean }> };
    const production = new Set(Object.entries(lockfile.packages).filter(([path, p]) => path.startsWith('node_modules/') && p.dev !== true).map(([path]) => path.slice('node_modules/'.length)));
    const missing = [...packagesTheExamplesImport()].filter((name) => name !== 'serve-fn' && !production.has(name));
    expect(examplePackages().sort()).toEqual(missing.sort());
    const { devDependencies } = JSON.parse(read('package.json')) as { devDependencies: Record<string, string> };
    for (const name of examplePackages()) expect(devDependencies[name], name).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('turns those devDependencies into dependencies before pruning the rest, from the build stage and its lockfile', () => {
    const modules = stage('example-modules');
    expect(modules.instructions.slice(0, stage('build').instructions.length)).toEqual(stage('build').instructions);
    const [move] = runs(modules).slice(runs(stage('build')).length);
    expect(move).toMatch(/^for name in \$\{EXAMPLE_PACKAGES\}; do .*npm pkg set "dependencies\.\$\{name\}=.*npm pkg delete "devDependencies\.\$\{name\}".*done.* && npm prune --omit=dev --ignore-scripts$/s);
  });
});
