import { Command, InvalidArgumentError, Option } from 'commander';
import { devCommand } from './dev-command.js';
import { doctorCommand } from './doctor-command.js';
import { openapiCommand } from './openapi-command.js';
import { startCommand } from './start-command.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('a port is an integer from 0 to 65535');
  return n;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

const defaultPort = process.env.SERVE_FN_PORT ? port(process.env.SERVE_FN_PORT) : 8000;

export function buildProgram(): Command {
  const program = new Command('serve-fn').description('Serve decorated TypeScript model classes over HTTP').showHelpAfterError();

  program
    .command('dev')
    .description('serve with reload on file change, pretty logs, on 127.0.0.1')
    .argument('[entry]', 'model file, or folder with serve-fn.config.ts / index.ts', '.')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'port to listen on (env SERVE_FN_PORT)', port, defaultPort)
    .action((entry: string, opts: { host: string; port: number }) => devCommand(entry, opts));

  program
    .command('start')
    .description('serve for production: JSON logs, no reload, on 0.0.0.0')
    .argument('[entry]', 'model file, or folder with serve-fn.config.ts / index.ts', '.')
    .option('--host <host>', 'address to bind', process.env.SERVE_FN_HOST ?? '0.0.0.0')
    .option('--port <port>', 'port to listen on (env SERVE_FN_PORT)', port, defaultPort)
    .option('--body-limit <bytes>', 'largest request body in bytes', positiveInt)
    .option('--grace-period <ms>', 'longest drain on SIGTERM before exiting 1', positiveInt, 30_000)
    .option('--dev', 'pretty logs and endpoint list (used by serve-fn dev)', false)
    .addOption(new Option('--standby', 'wait for serve-fn dev to say go').hideHelp())
    .action(async (entry: string, opts: { host: string; port: number; bodyLimit?: number; gracePeriod: number; dev: boolean; standby?: boolean }) => {
      await startCommand(entry, {
        host: opts.host,
        port: opts.port,
        dev: opts.dev,
        bodyLimit: opts.bodyLimit,
        gracePeriodMs: opts.gracePeriod,
        standby: opts.standby,
      });
    });

  program
    .command('openapi')
    .description('print the OpenAPI document without serving')
    .argument('[entry]', 'model file, or folder with serve-fn.config.ts / index.ts', '.')
    .action((entry: string) => openapiCommand(entry));

  program
    .command('doctor')
    .description('report the backends found: ONNX Runtime and its providers, AscendCL and NPU devices')
    .option('--json', 'print the report as JSON', false)
    .action((opts: { json: boolean }) => doctorCommand(opts));

  return program;
}

export async function main(argv: readonly string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv as string[]);
  } catch (err) {
    process.stderr.write(`serve-fn: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
