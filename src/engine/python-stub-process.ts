import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { delimiter } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { ModelLogger } from '../instance/instance-logger.js';
import type { FromStub } from '../wire/python-stub-messages.js';
import { STUB_SHM_DIR, StubChannel, type ReceivedFrame } from './python-stub-channel.js';

/** The folder of pb_stub.py and triton_python_backend_utils.py (`npm run build` copies it beside the built files). */
const PYTHON_DIR = fileURLToPath(new URL('../instance/python/', import.meta.url));

/** How a model's stub processes are started. */
export interface StubLaunch {
  /** The interpreter: python3 on PATH, EXECUTION_ENV_PATH's bin/python3, or the model's PYTHON_INTERPRETER. */
  readonly interpreter: string;
  /** Extra environment for the stub (an execution environment's PATH). */
  readonly env: Readonly<Record<string, string>>;
  /** The stub's working folder: the model's folder. */
  readonly cwd: string;
  readonly logger: ModelLogger;
  /** Fields on each log line of the stub's (model, instance). */
  readonly logFields: Readonly<Record<string, unknown>>;
}

export interface StubProcess {
  readonly child: ChildProcess;
  readonly channel: StubChannel;
  /** Resolves once the process has exited and its output has been logged. */
  readonly closed: Promise<void>;
}

/**
 * Starts the interpreter on pb_stub.py with two extra pipes (fd 3 to it, fd 4 from it), its stdout
 * and stderr going to the server log line by line (a model's print(), Python's own errors), as
 * Triton logs a stub's output. `onExit` hears once why the process ended (or could not start),
 * with the end of its stderr (an import error's traceback).
 */
export function startStubProcess(launch: StubLaunch, onFrame: (frame: ReceivedFrame) => void, onExit: (why: string) => void): StubProcess {
  const shmPrefix = `serve-fn-pb-${process.pid}-${randomBytes(6).toString('hex')}`;
  const child = spawn(launch.interpreter, [`${PYTHON_DIR}pb_stub.py`, '3', '4', STUB_SHM_DIR, shmPrefix], {
    cwd: launch.cwd,
    env: { ...process.env, ...launch.env, PYTHONPATH: [PYTHON_DIR, process.env.PYTHONPATH].filter(Boolean).join(delimiter), PYTHONUNBUFFERED: '1' },
    stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
  });
  const [, stdout, stderr, toStub, fromStub] = child.stdio as [null, Readable, Readable, Writable, Readable];
  const channel = new StubChannel(toStub, fromStub, shmPrefix, onFrame);
  // A write to a stub that just died fails here; its exit reports the death.
  toStub.on('error', () => undefined);
  let stderrTail = '';
  relayLines(stdout, (line) => launch.logger.info({ ...launch.logFields, stream: 'stdout' }, line));
  relayLines(stderr, (line) => {
    stderrTail = (stderrTail + line + '\n').slice(-4000);
    launch.logger.warn({ ...launch.logFields, stream: 'stderr' }, line);
  });
  let reported = false;
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const ended = (why: string): void => {
    if (reported) return;
    reported = true;
    channel.removeLeftovers();
    onExit(why);
  };
  child.on('error', (err: NodeJS.ErrnoException) => ended(err.code === 'ENOENT'
    ? `the Python interpreter '${launch.interpreter}' was not found: install python3 with numpy, or point the model at one with its EXECUTION_ENV_PATH or PYTHON_INTERPRETER parameter`
    : err.message));
  // 'close' comes after the pipes are drained, so the traceback of a failed import is in stderrTail.
  child.on('close', (code, signal) => ended(`the stub process exited (${signal ?? `code ${code}`})${stderrTail ? `: ${stderrTail.trim()}` : ''}`));
  return { child, channel, closed };
}

function relayLines(stream: Readable, write: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (text: string) => {
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) write(line);
  });
  stream.on('end', () => partial && write(partial));
}

/**
 * Runs the model's static `auto_complete_config` in a stub of its own (Triton runs it before any
 * instance, in an interpreter it then discards) and returns the completed configuration JSON.
 */
export function autoCompleteInStub(launch: StubLaunch, file: string, config: Record<string, unknown>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const { channel } = startStubProcess(
      launch,
      ({ message }) => {
        if (settled) return;
        if (message.type === 'auto-completed') {
          settled = true;
          resolve(message.config);
        } else if (message.type === 'init-failed') {
          settled = true;
          launch.logger.error(launch.logFields, message.error.message);
          reject(new Error(message.error.message));
        } else if (message.type === 'log') {
          launch.logger[message.level](launch.logFields, message.message);
        }
      },
      (why) => {
        if (settled) return;
        settled = true;
        reject(new Error(why));
      },
    );
    channel.send(() => ({ type: 'auto-complete', file, config }));
  });
}

export type { FromStub };
