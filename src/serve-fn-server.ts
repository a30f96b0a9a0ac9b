import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import multipart from '@fastify/multipart';
import { buildDefinitions } from './definition/definition-builder.js';
import type { InferOptions } from './definition/model-context.js';
import type { ModelClass, ModelDefinition } from './definition/model-definition.js';
import { createError } from './errors/index.js';
import { installHttpMetrics } from './metrics/http-metrics.js';
import { silentLogger, type ModelLogger } from './instance/instance-logger.js';
import { installRequestTracing, type RequestTracing } from './tracing/request-tracing.js';
import { TraceSettings } from './tracing/trace-settings.js';
import { InferenceRecorder } from './metrics/inference-recorder.js';
import { FolderModelRepository, type FolderModelRepositoryOptions, type ModelControlMode } from './model-repository/folder-model-repository.js';
import { EmptyModelRepository } from './inference/empty-model-repository.js';
import { ModelCatalogue } from './inference/model-catalogue.js';
import { kserveProtocol } from './protocol/kserve-protocol.js';
import type { GrpcServerHandle } from './protocol/grpc/grpc-server.js';
import { SystemSharedMemoryRegistry, type SharedMemoryLimits } from './protocol/system-shared-memory/registry.js';
import type { RestartPolicy } from './spec/restart-policy.js';
import type { InstanceFactory } from './engine/model-instance.js';
import { ModelRuntime } from './inference/model-runtime.js';
import { DecoratedModel } from './inference/decorated-model.js';
import { decoratedInstanceFactory } from './inference/decorated-instances.js';
import { speechRoutes } from './protocol/speech/speech-routes.js';
import { openAiImageRoutes } from './protocol/openai/openai-image-routes.js';
import { isTextToSpeechModel, textToSpeechRoutes } from './protocol/openai/openai-text-to-speech-routes.js';
import type { VersionBuilderContext } from './model-repository/model-version-builder.js';
import type { TextEngine } from './text/text-engine.js';
import { openAiRoutes } from './protocol/openai/openai-routes.js';
import { teiRoutes } from './protocol/tei/tei-routes.js';
import { DEFAULT_TEXT_PAYLOAD_LIMIT } from './protocol/text-routes.js';
import { cohereVllmRoutes } from './protocol/cohere-vllm/cohere-vllm-routes.js';
import { registerGenerationRoutes } from './protocol/openai/generation-routes.js';
import { GeneratorInferenceModel } from './protocol/kserve-generator-model.js';
import type { ServedGenerator } from './generation/text-generator.js';
import { endpointRoutes } from './server/endpoint-routes.js';
import { installErrorHandling } from './server/error-handler.js';
import { healthRoutes } from './server/health-routes.js';
import { DEFAULT_JSON_BODY_LIMIT, installJsonBodyParser } from './server/json-body-parser.js';
import { installLingeringClose } from './server/lingering-close.js';
import { installUnusedConnectionClose } from './server/unused-connections.js';
import { metricsRoutes } from './server/metrics-routes.js';
import { collectDtoSchemas, registerOpenApi } from './server/openapi-plugin.js';
import { readProjectInfo } from './server/project-info.js';
import { requestId } from './server/request-id.js';
import { AccessLogController } from './server/request-log.js';
import { securityPlugin, securityServerOptions, type SecurityOptions, type TlsFiles } from './server/security-plugin.js';
import { ServerState } from './server/server-state.js';
import { socketRoutes } from './server/socket-routes.js';
import { FolderModels, type FolderModelsOptions } from './server/folder-models.js';

export const DEFAULT_BODY_LIMIT = 64 * 1024 * 1024;

/** The server's options; the folders served with no code and their flags are FolderModelsOptions'. */
export interface ServeOptions extends FolderModelsOptions {
  readonly models: readonly ModelClass[];
  /** URL of the module exporting the model classes; worker-thread instances import it. */
  readonly moduleUrl?: string;
  readonly logger?: FastifyServerOptions['logger'];
  /** Largest accepted request body in bytes (default 64 MiB, Triton's default). */
  readonly bodyLimit?: number;
  /** Largest body of a JSON endpoint in bytes (default 1 MiB, fastify's default, and never above bodyLimit); multipart and /v2 keep bodyLimit. */
  readonly jsonBodyLimit?: number;
  /** Whether 500s answer with the error's message (`serve-fn dev`) instead of a generic one and the request id (default false). */
  readonly exposeErrors?: boolean;
  /** The app's name and version in the OpenAPI document; by default read from the project (project-info.ts). */
  readonly title?: string;
  readonly version?: string;
  readonly restartPolicy?: RestartPolicy;
  readonly collectProcessMetrics?: boolean;
  /** Triton's `nv_inference_*_summary_us` summaries beside the latency histograms (docs/metrics.md). */
  readonly summaryLatencies?: boolean;
  /** OpenTelemetry tracing (startTracing); close() shuts it down, exporting what it holds. */
  readonly tracing?: RequestTracing;
  /** A Triton model repository served beside the decorated models (its models answer ctx.infer too). */
  readonly repository?: RepositoryServeOptions;
  /** --model-control-mode of a server without a repository: how its repository routes answer (EmptyModelRepository). */
  readonly modelControlMode?: ModelControlMode;
  /** API key, CORS, rate limit and request timeout (security-plugin.ts); all off when absent. */
  readonly security?: SecurityOptions;
  /**
   * Swagger UI and /openapi.json: `protected` (default) behind the API key when one is set, `public`
   * open to all as the probes are, `off` not served (FastAPI's `docs_url=None, openapi_url=None`);
   * `kserveRoutes: false` leaves the KServe v2 and shared-memory routes out of the document.
   */
  readonly docs?: { readonly access?: 'protected' | 'public' | 'off'; readonly kserveRoutes?: boolean };
  /** Serve HTTPS with this certificate and key. */
  readonly tls?: TlsFiles;
  /** Serve the inference protocol over gRPC too (KServe's GRPCInferenceService); off unless given. */
  readonly grpc?: { readonly port: number; readonly host?: string };
  /** Generative models served beside the folders (a runtime of the caller's own); the OpenAI / vLLM routes and /v2 serve both. */
  readonly generators?: readonly ServedGenerator[];
  /** Caps on the clients' system shared-memory regions (default DEFAULT_SHARED_MEMORY_LIMITS). */
  readonly sharedMemoryLimits?: SharedMemoryLimits;
}

/** How the server names itself in KServe server metadata, over HTTP and gRPC alike. */
export const SERVER_IDENTITY = {
  serverName: 'serve-fn',
  serverVersion: (createRequire(import.meta.url)('../package.json') as { version: string }).version,
} as const;

export type RepositoryServeOptions = Pick<FolderModelRepositoryOptions, 'root' | 'controlMode' | 'startupModels' | 'pollIntervalMs' | 'maxInstances'>;

/**
 * A serve-fn server: model runtimes plus the fastify app that fronts them. `start()` initialises
 * every instance before any route exists; `close()` drains, then finalises.
 */
export class ServeFnServer {
  readonly state = new ServerState(() => this.unavailableModel());
  readonly recorder: InferenceRecorder;
  readonly app: FastifyInstance;
  readonly definitions: readonly ModelDefinition[];
  /** The Triton model repository, when `repository` was given; loaded by start(), unloaded by close(). */
  readonly repository: FolderModelRepository | undefined;
  /** What the KServe protocols (HTTP and gRPC) serve: the decorated models beside the repository's; built by prepare(). */
  private catalogue!: ModelCatalogue;
  private runtimes: ModelRuntime[] = [];
  /** The models served with no code (text, generative, speech, diffusion) and @TextModel classes; built by prepare(). */
  private folderModels = FolderModels.none;
  private readonly bodyLimit: number;
  private readonly jsonBodyLimit: number;
  private grpc?: GrpcServerHandle;
  private preparing?: Promise<void>;
  private startup?: Promise<void>;
  private listening?: Promise<string>;
  /** The clients' shared-memory regions, one set for HTTP and gRPC as in Triton. */
  private readonly sharedMemory: SystemSharedMemoryRegistry;
  /** Triton's trace settings, one set for HTTP and gRPC: which requests get their model's spans. */
  private readonly traceSettings: TraceSettings;
  private silentModelLogger?: ModelLogger;

  constructor(private readonly options: ServeOptions) {
    this.definitions = buildDefinitions(options.models);
    this.bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
    this.jsonBodyLimit = Math.min(options.jsonBodyLimit ?? DEFAULT_JSON_BODY_LIMIT, this.bodyLimit);
    this.sharedMemory = new SystemSharedMemoryRegistry(options.sharedMemoryLimits);
    this.traceSettings = new TraceSettings(options.tracing !== undefined);
    this.recorder = new InferenceRecorder({ collectProcessMetrics: options.collectProcessMetrics ?? true, summaryLatencies: options.summaryLatencies });
    this.app = fastify({
      logger: options.logger ?? false,
      logController: new AccessLogController(),
      bodyLimit: this.bodyLimit,
      genReqId: requestId,
      forceCloseConnections: 'idle',
      ...securityServerOptions(options.security ?? {}, options.tls),
    });
    // A folder that appears later under a name the server serves otherwise stays unloaded (poll mode).
    this.repository = options.repository && new FolderModelRepository({ ...options.repository, ...this.repositoryContext(), takenName: (name) => this.catalogue.takenFromRepository(name) });
  }

  /** Builds runtimes and routes without starting any instance (enough for the OpenAPI document). */
  prepare(): Promise<void> {
    this.preparing ??= this.buildModelsAndRoutes();
    return this.preparing;
  }

  private async buildModelsAndRoutes(): Promise<void> {
    const log = (level: 'info' | 'warn' | 'error', message: string): void => this.app.log[level](message);
    this.runtimes = this.definitions.map(
      (def) => new ModelRuntime(def, { factory: this.instanceFactory(def), recorder: this.recorder, log, restartPolicy: this.options.restartPolicy }),
    );
    const notServing = (): string | undefined => (this.state.ready ? undefined : this.state.phase);
    const decorated = this.runtimes.map((runtime) => new DecoratedModel(runtime, { notServing }));
    const folders = (this.folderModels = await FolderModels.load(this.options, {
      decorated, modelDir: this.modelDir, builder: this.repositoryContext(), registry: this.recorder.registry, log: (message, err) => this.app.log.error({ err }, message),
    }));
    // A @TextModel class is served to /v2 as its texts-in interface, in place of its token tensors; a @GenerativeModel class as its generate view.
    const own = decorated.filter((m) => !folders.text.classNames.has(m.info.name) && !folders.generators.classNames.has(m.info.name));
    // Each generator is a v2 model too, for Triton's generate extension and ModelStreamInfer.
    const generatorViews = this.generators.map((served) => new GeneratorInferenceModel(served));
    const kinds = [
      { kind: '@Model class', models: own, versioned: true },
      { kind: 'text model', models: folders.text.views },
      { kind: 'generative model', models: generatorViews },
      { kind: 'speech model', models: folders.speech.inferenceModels },
      { kind: 'image model', models: folders.diffusion.views() },
    ];
    this.catalogue = ModelCatalogue.of(kinds, this.repository ?? new EmptyModelRepository(this.options.modelControlMode));
    await this.buildRoutes();
  }

  async openapi(): Promise<Record<string, unknown>> {
    await this.prepare();
    return this.app.swagger() as unknown as Record<string, unknown>;
  }

  /** Initialises every instance, once: later calls, and close(), wait for the same start. */
  start(): Promise<void> {
    this.startup ??= this.startInstances();
    return this.startup;
  }

  private async startInstances(): Promise<void> {
    await this.prepare();
    await this.catalogue.refuseRepositoryNames();
    const started = await Promise.allSettled([...this.runtimes.map((r) => r.engine.start()), this.folderModels.start(), this.repository?.start()]);
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.allSettled([...this.runtimes.map((r) => r.engine.stop()), this.folderModels.stop(), this.repository?.close()]);
      throw failed.reason;
    }
    // close() during the start has already moved the phase on; the server must not turn ready.
    if (this.state.phase === 'starting') this.state.set('ready');
  }

  /** Starts (if not started) and listens; refuses with SF_ERR_DRAINING when close() began first. */
  async listen(port: number, host: string): Promise<string> {
    await this.start();
    if (this.state.phase !== 'ready') throw createError('SF_ERR_DRAINING');
    this.listening = this.app.listen({ port, host });
    const address = await this.listening;
    if (this.options.grpc) {
      // Imported only when served: @grpc/grpc-js and the parsed protos cost resident memory for as long as the server runs.
      const { startGrpcServer } = await import('./protocol/grpc/grpc-server.js');
      this.grpc = await startGrpcServer({
        ...SERVER_IDENTITY,
        repository: this.catalogue,
        recorder: this.recorder,
        ready: () => this.state.notReadyReason() === undefined,
        port: this.options.grpc.port,
        host: this.options.grpc.host ?? host,
        maxMessageBytes: this.bodyLimit,
        sharedMemory: this.sharedMemory,
        security: this.options.security,
        tls: this.options.tls,
        exposeErrors: this.options.exposeErrors ?? false,
        logger: this.app.log,
        tracing: this.options.tracing,
        traceSettings: this.traceSettings,
      });
    }
    return address;
  }

  /** The generative models served (from folders), what the OpenAI / vLLM routes serve; built by prepare(). */
  get generators(): readonly ServedGenerator[] {
    return [...(this.options.generators ?? []), ...this.folderModels.generators.served];
  }

  /** The text models served (from folders and @TextModel classes); built by prepare(). */
  get texts(): readonly TextEngine[] {
    return this.folderModels.text.set.all();
  }

  /** The gRPC port bound by listen(), when gRPC is on. */
  get grpcPort(): number | undefined {
    return this.grpc?.port;
  }

  /**
   * Readiness turns 503 at once; requests are still served for `shutdownDelayMs` (what a Kubernetes
   * preStop sleep gives load balancers to stop routing here), then new ones get 503 SF_ERR_DRAINING,
   * in-flight ones finish, and every instance is finalised. From the first moment, answers carry
   * `Connection: close`, so keep-alive clients reconnect elsewhere instead of finding their socket
   * closed under them. Streamed responses and WebSocket sessions still open `streamTimeoutMs` after
   * the drain began are cancelled.
   */
  async close(options: { readonly streamTimeoutMs?: number; readonly shutdownDelayMs?: number } = {}): Promise<void> {
    const phase = this.state.phase;
    if (phase === 'terminating' || phase === 'draining' || phase === 'stopped') return;
    if (phase === 'starting') {
      // Nothing was routed here yet, so there is no delay to give. Instances still in initialize()
      // cannot be stopped midway; the start ends first, so each instance it started is finalised.
      this.state.set('draining');
      await this.startup?.catch(() => undefined);
    } else {
      this.state.set('terminating');
      if (options.shutdownDelayMs) await new Promise((resolve) => setTimeout(resolve, options.shutdownDelayMs));
      this.state.set('draining');
    }
    // fastify cannot close a server whose listen() is still binding.
    await this.listening?.catch(() => undefined);
    const drainStartMs = Date.now();
    const { streamTimeoutMs } = options;
    this.app.log.info({ streamTimeoutMs }, 'drain started: new requests get 503, in-flight requests finish');
    // Decorated and text engines (a text model's forward batches are a scheduler on its forward model's engine), then
    // the repository's, whose models their in-flight requests may still call, within what is left of the one
    // stream timeout, so the whole drain stays within the grace period it was given; then the transports.
    await Promise.all([...this.runtimes.map((r) => r.engine.drain(streamTimeoutMs)), this.folderModels.stop(streamTimeoutMs)]);
    await this.repository?.close({ streamTimeoutMs: streamTimeoutMs === undefined ? undefined : Math.max(0, drainStartMs + streamTimeoutMs - Date.now()) });
    await Promise.all([this.app.close(), this.grpc?.close()]);
    this.sharedMemory.unregister();
    await Promise.all(this.runtimes.map((r) => r.engine.stop()));
    this.state.set('stopped');
    this.app.log.info({ durationMs: Date.now() - drainStartMs }, 'drain finished: every instance finalized');
    await this.options.tracing?.shutdown();
  }

  /**
   * ctx.infer: one model calling another through that model's queue; the name resolves through the
   * catalogue (ModelCatalogue.call), as /v2 and gRPC resolve it. `traceparent` is the caller's
   * compute span when it is traced: the callee's spans go under it.
   */
  async infer(model: string, input: unknown, options: InferOptions = {}, traceparent?: string): Promise<unknown> {
    const parent = traceparent === undefined ? undefined : this.options.tracing?.traceOfParent(traceparent);
    return this.catalogue.call(model, input, options, this.traceSettings.admit(model, parent));
  }

  /** How the repository builds model versions; text folders' forward models are built the same way. */
  private repositoryContext(): VersionBuilderContext {
    return {
      recorder: this.recorder,
      log: (level, message) => this.app.log[level](message),
      infer: (model, input, opts, traceparent) => this.infer(model, input, opts, traceparent),
      // Ensemble steps see the models ctx.infer sees: a decorated class's tensor interface too.
      resolve: (name, version) => this.catalogue.get(name, version),
      restartPolicy: this.options.restartPolicy,
      logger: this.modelLogger,
    };
  }

  /**
   * The logger models' ctx.logger extends: fastify's pino when the server logs, else a silent one
   * (fastify's stand-in for no logger has none of pino's levels for worker lines).
   */
  private get modelLogger(): ModelLogger {
    return this.options.logger ? (this.app.log as ModelLogger) : (this.silentModelLogger ??= silentLogger());
  }

  private async buildRoutes(): Promise<void> {
    const app = this.app;
    const exposeErrors = this.options.exposeErrors ?? false;
    installHttpMetrics(app, this.recorder.registry);
    if (this.options.tracing) installRequestTracing(app, this.options.tracing);
    installErrorHandling(app, {
      bodyLimit: this.bodyLimit,
      exposeErrors,
      // Node closes the socket after an answer that says so: a keep-alive client then opens a new
      // connection (to another replica) for its next request, rather than racing the socket's close.
      closingConnections: () => this.state.phase === 'terminating' || this.state.phase === 'draining',
    });
    installLingeringClose(app);
    installUnusedConnectionClose(app);
    installJsonBodyParser(app, this.jsonBodyLimit);
    await securityPlugin(app, { ...this.options.security, publicDocs: this.options.docs?.access === 'public' });
    await app.register(multipart, { limits: { fileSize: this.bodyLimit, fieldSize: this.bodyLimit } });
    const schemas = collectDtoSchemas(this.definitions);
    const project = await readProjectInfo({ moduleUrl: this.options.moduleUrl, folder: this.options.repository?.root });
    await registerOpenApi(app, schemas, {
      title: this.options.title ?? project.title,
      version: this.options.version ?? project.version,
      description: this.definitions.map((d) => `**${d.name}** v${d.version}${d.description ? `: ${d.description}` : ''}`).join('\n\n'),
      kserveRoutes: this.options.docs?.kserveRoutes,
      served: this.options.docs?.access !== 'off',
    });
    await app.register(healthRoutes, { state: this.state });
    await app.register(metricsRoutes, { recorder: this.recorder });
    await app.register(endpointRoutes, { runtimes: this.runtimes, state: this.state, schemas, jsonBodyLimit: this.jsonBodyLimit, bodyLimit: this.bodyLimit, exposeErrors, traceSettings: this.traceSettings });
    // On the root app, not as an encapsulated plugin, so @fastify/websocket's injectWS is on `app`.
    await socketRoutes(app, { runtimes: this.runtimes, state: this.state, schemas, maxPayload: this.bodyLimit, traceSettings: this.traceSettings });
    const textRoutes = this.texts.length > 0;
    if (textRoutes) await this.textRoutes(exposeErrors);
    const generators = this.generators;
    if (generators.length > 0) await registerGenerationRoutes(app, generators, { serverVersion: SERVER_IDENTITY.serverVersion, exposeErrors, bodyLimit: this.jsonBodyLimit, textRoutes });
    const { speech, diffusion } = this.folderModels;
    if (speech.models.length > 0) await app.register(speechRoutes, { models: speech, exposeErrors, bodyLimit: this.bodyLimit });
    if (diffusion.pipelines.length > 0) await app.register(openAiImageRoutes, { pipelines: diffusion.pipelines, exposeErrors, bodyLimit: this.jsonBodyLimit });
    // Only where a model served from the start can speak, so the route never takes an @Endpoint's path for nothing.
    if (this.catalogue.models().some(isTextToSpeechModel)) await app.register(textToSpeechRoutes, { models: () => this.catalogue.models(), exposeErrors, bodyLimit: this.jsonBodyLimit });
    await app.register(kserveProtocol, {
      ...SERVER_IDENTITY,
      repository: this.catalogue,
      recorder: this.recorder,
      ready: () => this.state.notReadyReason() === undefined,
      bodyLimit: this.bodyLimit,
      exposeErrors,
      sharedMemory: this.sharedMemory,
      traceSettings: this.traceSettings,
    });
    await app.ready();
  }

  /** The text protocols' routes; one an @Endpoint took already is refused naming both, not with fastify's bare error. */
  private async textRoutes(exposeErrors: boolean): Promise<void> {
    const text = { models: this.folderModels.text.set, exposeErrors, payloadLimit: Math.min(this.options.text?.payloadLimit ?? DEFAULT_TEXT_PAYLOAD_LIMIT, this.bodyLimit) };
    try {
      const generators = this.generators;
      await this.app.register(teiRoutes, { ...text, serverVersion: SERVER_IDENTITY.serverVersion, othersReady: () => generators.every((g) => g.generator.ready()) });
      await this.app.register(openAiRoutes, { ...text, generators });
      await this.app.register(cohereVllmRoutes, text);
    } catch (err) {
      const taken = (err as { code?: string }).code === 'FST_ERR_DUPLICATED_ROUTE' ? /'(\w+)'.*'([^']+)'/.exec((err as Error).message) : null;
      if (!taken) throw err;
      const [, method, path] = taken;
      const owner = this.definitions.flatMap((d) => d.endpoints).find((e) => e.path === path && e.httpMethod === method);
      throw createError('SF_ERR_ENDPOINT_DUPLICATE', method, path, owner?.id ?? 'an endpoint', 'the text model routes (TEI, OpenAI, Cohere/Jina/vLLM)', { cause: err });
    }
  }

  /**
   * A model that cannot serve now, for readiness: a decorated model with every instance past its
   * restart limit, or a loaded repository version that is not ready (Triton's strict readiness).
   */
  private unavailableModel(): string | undefined {
    const lost = this.runtimes.find((r) => !r.engine.available);
    const folder = this.folderModels.notReady();
    if (folder) return folder;
    const generator = this.options.generators?.find((g) => !g.generator.ready());
    if (generator) return `model '${generator.generator.name}' is not ready`;
    if (lost) return `model '${lost.definition.name}' version ${lost.definition.version} has no running instance`;
    const down = this.repository?.models().find((m) => !m.ready());
    return down && `model '${down.info.name}' version ${down.info.version} is not ready`;
  }

  /** How a @Model class's instances are made: in worker threads importing the module, or inline; their ctx.infer is the server's. */
  private instanceFactory(def: ModelDefinition): InstanceFactory {
    const infer = (model: string, input: unknown, opts: InferOptions, traceparent?: string): Promise<unknown> => this.infer(model, input, opts, traceparent);
    // A @GenerativeModel class's instances read its folder's tokenizer.json for structured outputs; the folder is read by prepare(), before any instance is made.
    const grammarVocabulary = () => this.folderModels.generators.classVocabulary(def.name);
    return decoratedInstanceFactory(def, { moduleUrl: this.options.moduleUrl, modelDir: this.modelDir, infer, logger: this.modelLogger, grammarVocabulary });
  }

  /** The folder of the models' module, where their relative paths start (the working folder without one). */
  private get modelDir(): string {
    return this.options.moduleUrl ? dirname(fileURLToPath(this.options.moduleUrl)) : process.cwd();
  }
}
