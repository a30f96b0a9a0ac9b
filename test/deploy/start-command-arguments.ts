import { buildProgram } from '../../src/cli/main.js';

export interface StartArguments {
  readonly entries: readonly string[];
  readonly host: string;
  readonly port: number;
  readonly gracePeriod: number;
  readonly bodyLimit?: number;
  readonly shutdownDelay?: number;
}

/**
 * Parses `serve-fn start <args>` with the real CLI definition and returns what the command would
 * receive, without starting it: deployment files are checked against the options that exist.
 */
export async function parseStartArguments(args: readonly string[]): Promise<StartArguments> {
  const program = buildProgram().exitOverride();
  const start = program.commands.find((command) => command.name() === 'start');
  if (!start) throw new Error('the CLI has no start command');
  let parsed: StartArguments | undefined;
  start.exitOverride().action((entries: string[], options: Omit<StartArguments, 'entries'>) => {
    parsed = { entries, ...options };
  });
  await program.parseAsync(['node', 'serve-fn', 'start', ...args]);
  if (!parsed) throw new Error(`serve-fn start ${args.join(' ')} did not reach the command`);
  return parsed;
}
