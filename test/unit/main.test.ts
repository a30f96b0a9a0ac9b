import { beforeEach, describe, expect, it, vi } from 'vitest';

const commands = vi.hoisted(() => ({ start: vi.fn(async () => undefined), dev: vi.fn(async () => undefined) }));
vi.mock('../../src/cli/start-command.js', () => ({ startCommand: commands.start }));
vi.mock('../../src/cli/dev-command.js', async (original) => ({ ...(await original<object>()), devCommand: commands.dev }));

const { buildProgram } = await import('../../src/cli/main.js');

/** Parses a command line with the real CLI definition; usage errors throw instead of exiting. */
async function parse(...args: string[]): Promise<void> {
  const program = buildProgram().exitOverride().configureOutput({ writeErr: () => {} });
  for (const command of program.commands) command.exitOverride().configureOutput({ writeErr: () => {} });
  await program.parseAsync(['node', 'serve-fn', ...args]);
}

beforeEach(() => {
  commands.start.mockClear();
  commands.dev.mockClear();
});

describe('serve-fn start flags', () => {
  it('passes --body-limit, --json-body-limit and --shutdown-delay to the start command', async () => {
    await parse('start', 'models.ts', '--body-limit', '2097152', '--json-body-limit', '65536', '--shutdown-delay', '0');
    expect(commands.start).toHaveBeenCalledWith(['models.ts'], expect.objectContaining({ bodyLimit: 2_097_152, jsonBodyLimit: 65_536, shutdownDelayMs: 0 }));
  });

  it('leaves them unset without the flags, so the server defaults and SERVE_FN_SHUTDOWN_DELAY_MS apply', async () => {
    await parse('start', 'models.ts');
    expect(commands.start).toHaveBeenCalledWith(['models.ts'], expect.objectContaining({ bodyLimit: undefined, jsonBodyLimit: undefined, shutdownDelayMs: undefined }));
  });

  it("takes Triton's --http-restricted-api and --grpc-restricted-protocol, each repeatable", async () => {
    await parse('start', 'models.ts', '--http-restricted-api', 'shared-memory:admin-key=a1', '--http-restricted-api', 'model-repository:other-key=b2', '--grpc-restricted-protocol=shared-memory,model-repository:admin-key=c3');
    expect(commands.start).toHaveBeenCalledWith(['models.ts'], expect.objectContaining({
      restrictedApis: {
        http: [{ groups: ['shared-memory'], header: 'admin-key', value: 'a1' }, { groups: ['model-repository'], header: 'other-key', value: 'b2' }],
        grpc: [{ groups: ['shared-memory', 'model-repository'], header: 'admin-key', value: 'c3' }],
      },
    }));
  });

  it('passes --device to the speech folders, and refuses a device they cannot run on as a usage error', async () => {
    await parse('start', 'SenseVoiceSmall-om', '--device', 'npu:1');
    expect(commands.start).toHaveBeenCalledWith(['SenseVoiceSmall-om'], expect.objectContaining({ speech: expect.objectContaining({ device: 'npu:1' }) }));
    await expect(parse('start', 'SenseVoiceSmall-om', '--device', 'gpu')).rejects.toMatchObject({ code: 'commander.invalidArgument' });
  });

  it('passes no restriction when neither is given, so the environment or the loopback default applies', async () => {
    await parse('start', 'models.ts');
    expect(commands.start).toHaveBeenCalledWith(['models.ts'], expect.objectContaining({ restrictedApis: { http: [], grpc: [] } }));
  });

  it.each([
    ['--http-restricted-api', 'inference:k=v'],
    ['--http-restricted-api', 'shared-memory'],
    ['--grpc-restricted-protocol', 'shared-memory:k='],
  ])('refuses %s %s as a usage error', async (flag, value) => {
    await expect(parse('start', 'models.ts', flag, value)).rejects.toMatchObject({ code: 'commander.invalidArgument' });
    expect(commands.start).not.toHaveBeenCalled();
  });

  it('refuses a group named by two settings, as Triton', async () => {
    await expect(parse('start', 'models.ts', '--grpc-restricted-protocol', 'shared-memory:a=1', '--grpc-restricted-protocol', 'shared-memory:b=2')).rejects.toMatchObject({
      code: 'commander.invalidArgument',
      message: expect.stringContaining("API 'shared-memory' can not be specified in multiple config groups."),
    });
  });

  it('passes --max-instances to the repository and --restart-limit as the restart policy', async () => {
    await parse('start', 'models', '--max-instances', '4', '--restart-limit', '2/30s');
    expect(commands.start).toHaveBeenCalledWith(['models'], expect.objectContaining({
      repository: expect.objectContaining({ maxInstances: 4 }),
      restartPolicy: { maxRestarts: 2, windowMs: 30_000 },
    }));
  });

  it.each([
    ['--max-instances', '0'],
    ['--restart-limit', '5'],
    ['--restart-limit', '5/0s'],
    ['--json-body-limit', '0'],
    ['--json-body-limit', '1.5'],
    ['--body-limit', 'big'],
    ['--shutdown-delay', '-1'],
    ['--shutdown-delay', '2.5'],
    ['--shutdown-delay', 'soon'],
  ])('refuses %s %s as a usage error', async (flag, value) => {
    await expect(parse('start', 'models.ts', flag, value)).rejects.toMatchObject({ code: 'commander.invalidArgument' });
    expect(commands.start).not.toHaveBeenCalled();
  });
});

describe('serve-fn dev flags', () => {
  it('takes --body-limit and --json-body-limit, which it passes to the server it runs', async () => {
    await parse('dev', 'models.ts', '--body-limit', '1000', '--json-body-limit', '100');
    expect(commands.dev).toHaveBeenCalledWith('models.ts', expect.objectContaining({ bodyLimit: 1000, jsonBodyLimit: 100 }));
  });
});

/** A command's help as `serve-fn <command> --help` prints it. */
function helpOf(name: string): string {
  const command = buildProgram().commands.find((c) => c.name() === name)!;
  return command.helpInformation();
}

describe('serve-fn help', () => {
  it('start: lists --host and --port first, leaves out the internal --dev, and groups the text-model flags last under their own heading', () => {
    const help = helpOf('start');
    expect(help).not.toMatch(/^\s+--dev\b/m);
    const at = (flag: string) => help.search(new RegExp(`^\\s+${flag}\\b`, 'm'));
    expect(at('--host')).toBeGreaterThan(-1);
    expect(at('--host')).toBeLessThan(at('--body-limit'));
    const heading = help.indexOf("Text models (TEI's flags and variables):");
    expect(heading).toBeGreaterThan(at('--restart-limit'));
    expect(at('--max-batch-tokens')).toBeGreaterThan(heading);
  });

  it('writes every default and variable in one notation, (default: …, env: NAME)', () => {
    const help = helpOf('start') + helpOf('dev');
    expect(help).not.toMatch(/\(env [A-Z]/);
    expect(help).not.toMatch(/\(default [^:]/);
    expect(help).not.toMatch(/\) \(env:/);
    expect(help).toMatch(/\(default: 8000, env: SERVE_FN_PORT\)/);
    expect(help).toMatch(/\(default: 16384, env: MAX_BATCH_TOKENS\)/);
    expect(help).toMatch(/\(default: 5000, env: SERVE_FN_SHUTDOWN_DELAY_MS\)/);
  });

  it('new: states its --serve-fn default once', () => {
    expect(helpOf('new').match(/default/g)).toHaveLength(2);
    expect(helpOf('new')).toMatch(/\(default: this installation\)/);
  });
});

describe('serve-fn start --log-level and --api-key', () => {
  it('passes them to the start command, beside their variables', async () => {
    await parse('start', 'models.ts', '--log-level', 'warn', '--api-key', 's3cret-key');
    expect(commands.start).toHaveBeenCalledWith(['models.ts'], expect.objectContaining({ logLevel: 'warn', apiKey: 's3cret-key' }));
  });

  it('takes the level from SERVE_FN_LOG_LEVEL and refuses one pino does not have', async () => {
    vi.stubEnv('SERVE_FN_LOG_LEVEL', 'debug');
    try {
      await parse('start', 'models.ts');
      expect(commands.start).toHaveBeenCalledWith(['models.ts'], expect.objectContaining({ logLevel: 'debug' }));
    } finally {
      vi.unstubAllEnvs();
    }
    await expect(parse('start', 'models.ts', '--log-level', 'loud')).rejects.toThrow(/Allowed choices are fatal, error, warn, info, debug, trace, silent/);
  });
});

describe('serve-fn start --docs and --docs-kserve', () => {
  it('passes the docs access and whether the KServe routes are documented', async () => {
    await parse('start', 'models.ts', '--docs', 'public', '--docs-kserve', 'false');
    expect(commands.start).toHaveBeenCalledWith(['models.ts'], expect.objectContaining({ docs: { access: 'public', kserveRoutes: false } }));
    await parse('start', 'models.ts');
    expect(commands.start).toHaveBeenLastCalledWith(['models.ts'], expect.objectContaining({ docs: { access: 'protected', kserveRoutes: true } }));
  });
});
