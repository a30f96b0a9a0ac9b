import { resolve } from 'node:path';
import { createRequire } from 'node:module';
import { inspect } from 'node:util';
import { Command, InvalidArgumentError, Option } from 'commander';
import { addApiRestriction, parseApiRestriction, type ApiRestriction } from '../server/restricted-apis.js';
import { DEFAULT_MAX_INSTANCES } from '../model-repository/instance-placement.js';
import type { RestartPolicy } from '../spec/restart-policy.js';
import { parseRestartLimit, RESTART_LIMIT_FORM } from '../definition/restart-limit.js';
import { parseStageInstances, type StageInstances } from '../diffusion/stage-instances.js';
import { batchGears, convertCommand, existingFile, flagConflict, irOption } from './convert-command.js';
import { DEFAULT_SERVE_FN_SPEC, TEMPLATE_NAMES, newCommand } from './new-command.js';
import { optionDescription, withNotes } from './option-help.js';
import { bool, textFlagArgs, textFlagOptions, textServeOptions, type TextFlags } from './text-flags.js';
import { generationFlagArgs, generationFlagOptions, generationServeOptions, type GenerationFlags } from './generation-flags.js';

// Commands import their modules when they run: the server's (fastify, gRPC, ONNX Runtime) take
// seconds to load, and `--version`, `--help` and `new` need none of them (docs/install.md).
const PACKAGE_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

/**
 * TypeScript support, for the commands that import user model files: registered before them, so
 * a model in .ts keeps its decorator metadata. It runs SWC in a hooks thread of its own, which
 * the other commands (and `dev`'s process, which only forwards) need not start.
 */
const withTypeScriptLoader = (): Promise<unknown> => import(new URL('../../loader/register.mjs', import.meta.url).href);

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('a port is an integer from 0 to 65535');
  return n;
}

/** --device of speech folders: where their offline ASR models run (speech-folder.ts speechModelFile). */
function speechDevice(value: string): string {
  if (!/^(cpu|npu(:\d+)?)$/.test(value.trim())) throw new InvalidArgumentError('expected cpu, npu or npu:<id>');
  return value.trim();
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('expected a whole number, 0 or more');
  return n;
}

/** A repeatable `<apis>:<header>=<value>`, Triton's restricted API setting. */
function apiRestriction(value: string, previous: readonly ApiRestriction[]): ApiRestriction[] {
  try {
    return addApiRestriction(previous, parseApiRestriction(value));
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function stageInstances(value: string): StageInstances {
  try {
    return parseStageInstances(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function restartLimit(value: string): RestartPolicy {
  const policy = parseRestartLimit(value);
  if (!policy) throw new InvalidArgumentError(`expected ${RESTART_LIMIT_FORM}`);
  return policy;
}

interface BodyLimitFlags {
  bodyLimit?: number;
  jsonBodyLimit?: number;
}

interface StartFlags extends BodyLimitFlags, TextFlags, GenerationFlags {
  host: string;
  quantize?: boolean;
  maxAudioSeconds?: number;
  device?: string;
  vadDir?: string;
  puncDir?: string;
  port: number;
  gracePeriod: number;
  shutdownDelay?: number;
  dev: boolean;
  devAddress?: string;
  modelControlMode: 'none' | 'explicit' | 'poll';
  loadModel: string[];
  repositoryPollSecs: number;
  maxInstances?: number;
  restartLimit?: RestartPolicy;
  grpc: boolean;
  grpcPort: number;
  shmMaxRegions?: number;
  shmMaxBytes?: number;
  httpRestrictedApi: ApiRestriction[];
  grpcRestrictedProtocol: ApiRestriction[];
  logLevel: string;
  apiKey?: string;
  docs: 'protected' | 'public' | 'off';
  docsKserve: 'true' | 'false';
  metricsSummaryLatencies?: boolean;
  maxNumSeqs?: number;
  diffusionAdmissionWaitMs?: number;
  stageInstances?: StageInstances;
}

interface ConvertFlags {
  socVersion: string;
  output: string;
  inputShape?: string;
  dynamicBatchSize?: string;
  precisionMode?: string;
  precisionModeV2?: string;
  option?: Record<string, string>;
}

/** pino's levels, which SERVE_FN_LOG_LEVEL takes too. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The body limits, which `dev` passes on to the `start` process it runs. */
function bodyLimitOptions(command: Command): Command {
  return command
    .addOption(withNotes(new Option('--body-limit <bytes>', 'largest request body in bytes').argParser(positiveInt), { default: '64 MiB' }))
    .addOption(withNotes(new Option('--json-body-limit <bytes>', 'largest JSON body of an @Endpoint without a bodyLimit of its own, never above --body-limit').argParser(positiveInt), { default: '1 MiB' }));
}

export function buildProgram(): Command {
  const program = new Command('serve-fn')
    .description('Serve decorated TypeScript model classes over HTTP')
    .version(PACKAGE_VERSION, '-V, --version', 'print the serve-fn version')
    .showHelpAfterError()
    .configureHelp({ optionDescription });

  generationFlagOptions(textFlagOptions(bodyLimitOptions(
    program
      .command('dev')
      .description('serve with reload on file change, pretty logs, on 127.0.0.1')
      .argument('[entry]', 'model file, folder with serve-fn.config.ts / index.ts, Triton model repository, or text model folder', '.')
      .option('--host <host>', 'address to bind', '127.0.0.1')
      .addOption(new Option('--port <port>', 'port to listen on').argParser(port).default(8000).env('SERVE_FN_PORT')),
  ))).action((entry: string, opts: { host: string; port: number } & BodyLimitFlags & TextFlags & GenerationFlags) => import('./dev-command.js').then(({ devCommand }) => devCommand(entry, { ...opts, textArgs: [...textFlagArgs(opts), ...generationFlagArgs(opts)] })));

  const start = program
    .command('start')
    .description('serve for production: JSON logs, no reload, on 0.0.0.0')
    .argument('[entry...]', 'model file, folder with serve-fn.config.ts / index.ts, Triton model repository, or text model folders (several, or a folder of them)')
    .addOption(new Option('--host <host>', 'address to bind').default('0.0.0.0').env('SERVE_FN_HOST'))
    .addOption(new Option('--port <port>', 'port to listen on').argParser(port).default(8000).env('SERVE_FN_PORT'))
    .addOption(new Option('--grpc-port <port>', 'port of the KServe v2 gRPC service').argParser(port).default(8001).env('SERVE_FN_GRPC_PORT'))
    .option('--no-grpc', 'do not serve gRPC')
    .addOption(new Option('--log-level <level>', 'least severe log lines written').choices(LOG_LEVELS).default('info').env('SERVE_FN_LOG_LEVEL'))
    .addOption(
      withNotes(new Option('--api-key <key>', 'clients send it as Authorization: Bearer <key> or x-api-key; visible to other users of the machine in its process list, where the variable is not'), {
        env: 'SERVE_FN_API_KEY',
      }),
    );
  start
    .optionsGroup('Documentation:')
    .addOption(new Option('--docs <access>', 'Swagger UI (/docs) and /openapi.json: behind the API key when one is set, open to all, or not served').choices(['protected', 'public', 'off']).default('protected').env('SERVE_FN_DOCS'))
    .addOption(new Option('--docs-kserve <bool>', 'list the KServe v2 and shared-memory routes in the document (they answer either way)').choices(['true', 'false']).default('true').env('SERVE_FN_DOCS_KSERVE'));
  bodyLimitOptions(start.optionsGroup('Limits and shutdown:'));
  start
    .addOption(
      withNotes(
        new Option(
          '--http-restricted-api <apis:header=value>',
          "as Triton's: HTTP APIs (shared-memory, model-repository, model-config, statistics) that need header=value, e.g. shared-memory,model-repository:admin-key=<secret>; repeatable",
        ).argParser(apiRestriction).default([]),
        { default: 'shared-memory and model-repository answer loopback clients only', env: 'SERVE_FN_HTTP_RESTRICTED_API' },
      ),
    )
    .addOption(
      withNotes(
        new Option('--grpc-restricted-protocol <apis:header=value>', "as Triton's: the same for gRPC, whose metadata key is triton-grpc-protocol-<header>; repeatable").argParser(apiRestriction).default([]),
        { default: 'as --http-restricted-api', env: 'SERVE_FN_GRPC_RESTRICTED_PROTOCOL' },
      ),
    )
    .option('--grace-period <ms>', 'longest drain on SIGTERM before exiting 1', positiveInt, 30_000)
    .addOption(withNotes(new Option('--shutdown-delay <ms>', 'after SIGTERM, how long readiness answers 503 while requests are still served').argParser(nonNegativeInt), { default: '5000', env: 'SERVE_FN_SHUTDOWN_DELAY_MS' }))
    // serve-fn dev's own: the process it runs.
    .addOption(new Option('--dev', 'pretty logs and endpoint list').default(false).hideHelp())
    .addOption(new Option('--dev-address <url>', 'the address serve-fn dev answers on and forwards from').hideHelp())
    .optionsGroup('Triton model repositories, shared memory and instances:')
    .addOption(new Option('--model-control-mode <mode>', 'Triton repository: load all at start (none), on request (explicit), or rescan (poll)').choices(['none', 'explicit', 'poll']).default('none'))
    .option('--load-model <name>', 'Triton repository, explicit mode: a model to load at start (repeatable; * loads all)', (name: string, all: string[]) => [...all, name], [])
    .option('--repository-poll-secs <seconds>', 'Triton repository, poll mode: seconds between rescans', positiveInt, 15)
    .addOption(withNotes(new Option('--shm-max-regions <n>', 'system shared memory: most regions registered at once').argParser(positiveInt).env('SERVE_FN_SHM_MAX_REGIONS'), { default: '1024' }))
    .addOption(withNotes(new Option('--shm-max-bytes <bytes>', 'system shared memory: most bytes all registered regions span').argParser(positiveInt).env('SERVE_FN_SHM_MAX_BYTES'), { default: '4 GiB' }))
    .addOption(withNotes(new Option('--max-instances <count>', 'Triton repository: most instances of one model version a config.pbtxt may ask for').argParser(positiveInt), { default: String(DEFAULT_MAX_INSTANCES), env: 'SERVE_FN_MAX_INSTANCES' }))
    .addOption(
      withNotes(new Option('--restart-limit <restarts/window>', "restarts of one crashed instance allowed within the window, e.g. 5/60s; past it the instance stays down until the window passes; a model's restart_limit parameter wins").argParser(restartLimit), {
        default: '5/60s',
        env: 'SERVE_FN_RESTART_LIMIT',
      }),
    )
    .addOption(new Option('--stage-instances <stage=count,...>', "diffusion folders: instances of each pipeline stage (text_encoder, denoiser, vae_decoder), e.g. denoiser=2,vae_decoder=1; over the stage folders' config.pbtxt counts").argParser(stageInstances))
    .addOption(withNotes(new Option('--diffusion-admission-wait-ms <ms>', "diffusion folders: an idle denoiser's first step waits this long so a burst starts together").argParser(nonNegativeInt).env('SERVE_FN_DIFFUSION_ADMISSION_WAIT_MS'), { default: '2' }))
    .addOption(new Option('--metrics-summary-latencies [bool]', "add Triton's nv_inference_*_summary_us latency summaries to /metrics, as Triton's --metrics-config summary_latencies=true").argParser(bool).env('SERVE_FN_METRICS_SUMMARY_LATENCIES'))
    .optionsGroup('Speech models (FunASR export folders, docs/speech.md):')
    .addOption(withNotes(new Option('--quantize [bool]', "serve model_quant.onnx, as FunASR's runtime's --quantize").argParser(bool), { default: 'false' }))
    .addOption(withNotes(new Option('--max-audio-seconds <seconds>', 'longest audio a speech model takes').argParser(positiveInt), { default: '600' }))
    .addOption(new Option('--device <device>', 'cpu, npu or npu:<id>: npu serves offline ASR folders from their model.om on an Ascend NPU (default: model.om when it is the only model file)').argParser(speechDevice))
    .addOption(new Option('--vad-dir <folder>', "an FSMN-VAD export to segment the ASR models' audio with, as FunASR's server's --vad-dir (default: the one among the served folders)"))
    .addOption(new Option('--punc-dir <folder>', "a CT-Transformer export to punctuate the ASR models' text with, as FunASR's server's --punc-dir (default: the one among the served folders)"));
  generationFlagOptions(textFlagOptions(start)).action(async (entries: string[], opts: StartFlags) => {
      await withTypeScriptLoader();
      const { startCommand } = await import('./start-command.js');
      await startCommand(entries, {
        host: opts.host,
        logLevel: opts.logLevel,
        apiKey: opts.apiKey,
        docs: { access: opts.docs, kserveRoutes: opts.docsKserve === 'true' },
        port: opts.port,
        dev: opts.dev,
        bodyLimit: opts.bodyLimit,
        jsonBodyLimit: opts.jsonBodyLimit,
        gracePeriodMs: opts.gracePeriod,
        shutdownDelayMs: opts.shutdownDelay,
        devAddress: opts.devAddress,
        grpc: opts.grpc && !opts.dev ? { port: opts.grpcPort } : undefined,
        restrictedApis: { http: opts.httpRestrictedApi, grpc: opts.grpcRestrictedProtocol },
        repository: { controlMode: opts.modelControlMode, startupModels: opts.loadModel, pollIntervalMs: opts.repositoryPollSecs * 1000, maxInstances: opts.maxInstances },
        restartPolicy: opts.restartLimit,
        text: textServeOptions(opts),
        generation: generationServeOptions(opts, opts.servedModelName),
        speech: {
          quantize: opts.quantize === true,
          ...(opts.maxAudioSeconds === undefined ? {} : { maxAudioSeconds: opts.maxAudioSeconds }),
          ...(opts.device === undefined ? {} : { device: opts.device }),
          ...(opts.vadDir === undefined ? {} : { vadDir: resolve(opts.vadDir) }),
          ...(opts.puncDir === undefined ? {} : { puncDir: resolve(opts.puncDir) }),
        },
        metricsSummaryLatencies: opts.metricsSummaryLatencies,
        diffusion: {
          ...(opts.maxNumSeqs === undefined ? {} : { maxRunning: opts.maxNumSeqs }),
          ...(opts.diffusionAdmissionWaitMs === undefined ? {} : { admissionWaitUs: opts.diffusionAdmissionWaitMs * 1000 }),
          ...(opts.stageInstances === undefined ? {} : { stageInstances: opts.stageInstances }),
        },
        sharedMemoryLimits: { ...(opts.shmMaxRegions === undefined ? {} : { maxRegions: opts.shmMaxRegions }), ...(opts.shmMaxBytes === undefined ? {} : { maxBytes: opts.shmMaxBytes }) },
      });
    });

  program
    .command('openapi')
    .description('print the OpenAPI document without serving')
    .argument('[entry]', 'model file, folder with serve-fn.config.ts / index.ts, or Triton model repository', '.')
    .action((entry: string) => withTypeScriptLoader().then(() => import('./openapi-command.js')).then(({ openapiCommand }) => openapiCommand(entry)));

  program
    .command('doctor')
    .description('report the backends found: ONNX Runtime and its providers, AscendCL and NPU devices, GE (the graph engine)')
    .option('--json', 'print the report as JSON', false)
    .action((opts: { json: boolean }) => import('./doctor-command.js').then(({ doctorCommand }) => doctorCommand(opts)));

  program
    .command('convert')
    .description("compile an ONNX model into an Ascend .om, as CANN's ATC does, through the graph engine (needs the GE build of the native addon)")
    .argument('<model>', 'the ONNX model file', existingFile)
    .requiredOption('--soc-version <soc>', 'the Ascend SoC to compile for, as ATC --soc_version (e.g. Ascend310P3; npu-smi info names it)')
    .requiredOption('-o, --output <file>', 'the .om file to write (GE adds .om where the name lacks it, as ATC --output does)')
    .option('--input-shape <shapes>', 'as ATC --input_shape: "name:d0,d1,...;name2:...", with -1 for the batch of --dynamic-batch-size')
    .option('--dynamic-batch-size <sizes>', 'as ATC --dynamic_batch_size: the batch gears, e.g. "1,4,8"', batchGears)
    .addOption(new Option('--precision-mode <mode>', 'as ATC --precision_mode, e.g. force_fp16 (ATC\'s inference default), force_fp32, allow_mix_precision').conflicts('precisionModeV2'))
    .option('--precision-mode-v2 <mode>', 'as ATC --precision_mode_v2: fp16, origin (serve-fn\'s default when neither is given), mixed_float16...')
    .option('--option <key=value>', 'another ge::ir_option of aclgrphBuildModel, e.g. ge.exec.op_precision_mode=high_precision (repeatable)', irOption)
    .action(async function (this: Command, model: string, opts: ConvertFlags) {
      const conflict = flagConflict(opts);
      if (conflict !== undefined) this.error(`error: ${conflict}`);
      await convertCommand(model, { ...opts, options: opts.option });
    });

  program
    .command('new')
    .description('create a project from a template: a model, its test, and the serve-fn dependency')
    .argument('<dir>', 'folder to create (must be new or empty); its name becomes the project and model name')
    .addOption(new Option('--template <name>', 'project template').choices([...TEMPLATE_NAMES]).default('basic'))
    .addOption(new Option('--serve-fn <spec>', 'serve-fn dependency: the path of a serve-fn installation or checkout, or an npm spec').default(DEFAULT_SERVE_FN_SPEC, 'this installation'))
    .action((dir: string, opts: { template: string; serveFn: string }) => newCommand(dir, opts));

  return program;
}

export async function main(argv: readonly string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv as string[]);
  } catch (err) {
    process.stderr.write(`serve-fn: ${(err as Error).message}\n`);
    // The cause is where it went wrong in the user's code (an initialize() failure): its stack names the file and line.
    const cause = (err as Error).cause;
    if (cause !== undefined) process.stderr.write(`caused by: ${inspect(cause)}\n`);
    process.exit(1);
  }
}
