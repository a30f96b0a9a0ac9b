import type { ChildProcess } from 'node:child_process';
import type { ModelContextData } from '../definition/model-context.js';
import { createError, ServeFnError, serializeError, statusOf } from '../errors/index.js';
import type { ConfigTensor } from '../spec/config-tensor.js';
import type { Tensor } from '../spec/tensor.js';
import type { FromStub, StubError, StubResponse, ToStub } from '../wire/python-stub-messages.js';
import { SocketLink } from '../wire/socket-session.js';
import { StreamChannel } from '../wire/stream-channel.js';
import type { StreamedResult, TensorWireRequest, TensorWireResult } from '../wire/tensor-model-plan.js';
import { now } from '../wire/epoch-time.js';
import type { ExecuteCall, ExecuteOutcome, SocketCall, WireResult } from '../wire/wire-format.js';
import type { InstanceEvents, ModelInstance } from './model-instance.js';
import { tensorsOf, type ReceivedFrame, type StubChannel } from './python-stub-channel.js';
import { startStubProcess, type StubLaunch } from './python-stub-process.js';

/** How long finalize may take before the stub is killed. */
const FINALIZE_TIMEOUT_MS = 30_000;

/** What a Python backend model's instances are started from (model-repository/python-model.ts builds it). */
export interface PythonStubPlan {
  /** The version folder's model.py. */
  readonly file: string;
  /** How its stubs are started (interpreter, environment, log). */
  readonly launch: StubLaunch;
  /** The outputs config.pbtxt declares. */
  readonly outputs: readonly ConfigTensor[];
}

/** A BLS call's response, or one of a decoupled call's. */
export interface BlsResponse {
  readonly outputs: readonly Tensor[];
  readonly parameters?: Readonly<Record<string, unknown>>;
  readonly final?: boolean;
}

export interface BlsRequest {
  readonly id?: string;
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly string[];
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly timeoutUs?: number;
}

/** What the stub reaches outside its model: the served models (BLS), the metrics registry, the log. */
export interface PythonStubServices {
  infer(model: string, version: string | undefined, request: BlsRequest): Promise<BlsResponse>;
  inferStream(model: string, version: string | undefined, request: BlsRequest): Promise<AsyncIterable<BlsResponse> | Iterable<BlsResponse>>;
  metric(message: Extract<FromStub, { type: 'metric' | 'metric-family' }>): void;
}

/**
 * TritonError codes as HTTP statuses, as Triton's HTTP frontend maps them (http_server.cc:
 * INTERNAL 500, NOT_FOUND 404, UNAVAILABLE 503, UNSUPPORTED 501, the rest 400); gRPC codes follow
 * from the status (grpc-errors.ts), as Triton's do.
 */
const STATUS_BY_TRITON_CODE: readonly number[] = [400, 500, 404, 400, 503, 501, 400, 400];
const TRITON_INTERNAL = 1;
const TRITON_CODE_BY_STATUS: Readonly<Record<number, number>> = { 400: 3, 404: 2, 499: 7, 501: 5, 503: 4 };

interface PendingCall {
  readonly requests: readonly TensorWireRequest[];
  readonly startMs: number;
  resolve(outcome: ExecuteOutcome): void;
  reject(err: Error): void;
}

/**
 * A Python backend model instance: a stub process (src/instance/python/pb_stub.py) running the
 * model's model.py, as python_backend runs one pb_stub per instance. It implements the engine's
 * ModelInstance like a worker thread, so the pool's restarts, the batcher, instance groups,
 * statistics and drain apply unchanged; messages and tensors cross as python-stub-messages.ts says.
 */
export class PythonStubInstance implements ModelInstance {
  readonly canQueueBehind = true;
  private child?: ChildProcess;
  private closed?: Promise<void>;
  private channel?: StubChannel;
  private readonly calls = new Map<number, PendingCall>();
  private readonly streams = new Map<number, { channel: StreamChannel; request: TensorWireRequest }>();
  private nextId = 1;
  private stopping = false;
  private finalized?: (error?: StubError) => void;

  constructor(
    readonly index: number,
    private readonly plan: PythonStubPlan,
    private readonly context: ModelContextData,
    private readonly events: InstanceEvents,
    private readonly services: PythonStubServices,
  ) {}

  /** Starts the stub and runs `initialize(args)` with Triton's `args` dict. */
  start(): Promise<void> {
    const args = {
      model_config: JSON.stringify(this.context.config),
      model_instance_kind: this.context.deviceKind === 'cpu' ? 'CPU' : this.context.deviceKind.toUpperCase(),
      model_instance_name: this.context.instanceName,
      model_instance_device_id: String(this.context.deviceId),
      model_repository: this.context.modelDir,
      model_version: this.context.modelVersion,
      model_name: this.context.modelName,
    };
    return new Promise<void>((resolve, reject) => {
      let started = false;
      const fail = (why: string): void => {
        if (started) return;
        started = true;
        // A stub whose initialize failed exits on its own; its exit is not a crash to restart.
        this.child?.kill('SIGKILL');
        this.child = undefined;
        this.channel = undefined;
        reject(createError('SF_ERR_INITIALIZE_FAILED', this.context.modelName, this.index, why));
      };
      const stub = startStubProcess(
        this.plan.launch,
        (frame) => this.onFrame(frame, (message) => {
          if (message.type === 'ready') {
            started = true;
            resolve();
          } else if (message.type === 'init-failed') {
            this.plan.launch.logger.error(this.plan.launch.logFields, message.error.message);
            fail(message.error.message);
          }
        }),
        (why) => (started ? this.onDeath(why) : fail(why)),
      );
      this.child = stub.child;
      this.closed = stub.closed;
      this.channel = stub.channel;
      stub.channel.send(() => ({ type: 'init', file: this.plan.file, args }));
    });
  }

  execute(call: ExecuteCall): Promise<ExecuteOutcome> {
    if (call.kind !== 'tensor') return Promise.reject(createError('SF_ERR_EXECUTION_FAILED', this.context.modelName, call.kind, 'a Python backend model is reached through its tensors only'));
    const channel = this.channel;
    if (!channel) return Promise.reject(this.crashed('not running'));
    const id = this.nextId++;
    return new Promise<ExecuteOutcome>((resolve, reject) => {
      this.calls.set(id, { requests: call.requests, startMs: now(), resolve, reject });
      this.sendExecute(id, call.requests);
    });
  }

  /** One request of a decoupled model: its response sender's responses stream until COMPLETE_FINAL. */
  openStream(call: ExecuteCall): StreamChannel {
    const id = this.nextId++;
    const stream = new StreamChannel({
      // The response sender does not wait for credit (python_backend's does not either); what the
      // client has not taken yet waits in the channel.
      grant: () => undefined,
      cancel: () => this.channel?.send(() => ({ type: 'cancel', id })),
    });
    if (call.kind !== 'tensor' || !this.channel) {
      stream.fail(this.channel ? createError('SF_ERR_EXECUTION_FAILED', this.context.modelName, call.kind, 'a Python backend model is reached through its tensors only') : this.crashed('not running'));
      return stream;
    }
    this.streams.set(id, { channel: stream, request: call.requests[0] });
    void stream.finished.then(() => this.streams.delete(id));
    this.sendExecute(id, call.requests);
    return stream;
  }

  openSocket(call: SocketCall): SocketLink {
    throw createError('SF_ERR_EXECUTION_FAILED', this.context.modelName, call.methodName, 'a Python backend model has no WebSocket endpoints');
  }

  /** Runs `finalize` and ends the stub (killed if finalize takes over FINALIZE_TIMEOUT_MS). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || this.stopping) return;
    this.stopping = true;
    const exited = this.closed ?? Promise.resolve();
    const finalized = new Promise<StubError | undefined>((resolve) => {
      this.finalized = resolve;
      void exited.then(() => resolve(undefined));
    });
    this.channel?.send(() => ({ type: 'finalize' }));
    const timer = setTimeout(() => child.kill('SIGKILL'), FINALIZE_TIMEOUT_MS);
    try {
      const error = await finalized;
      await exited;
      if (error) throw createError('SF_ERR_FINALIZE_FAILED', this.context.modelName, this.index, error.message);
    } finally {
      clearTimeout(timer);
      this.child = undefined;
      this.channel?.removeLeftovers();
      this.channel = undefined;
    }
  }

  private sendExecute(id: number, requests: readonly TensorWireRequest[]): void {
    this.channel!.send(
      (refs) => ({
        type: 'execute', id, model: this.context.modelName,
        requests: requests.map((request, i) => ({
          ...(request.id === undefined ? {} : { id: request.id }),
          inputs: refs[i], outputs: request.outputs, parameters: request.parameters,
          ...(request.sequence ? { correlation_id: request.sequence.correlationId, flags: (request.sequence.start ? 1 : 0) | (request.sequence.end ? 2 : 0) } : {}),
        })),
      }),
      requests.map((r) => r.inputs),
    );
  }

  private onFrame({ message, tensors }: ReceivedFrame, onStartMessage: (message: FromStub) => void): void {
    switch (message.type) {
      case 'responses': {
        const call = this.calls.get(message.id);
        if (!call) return;
        this.calls.delete(message.id);
        const results = message.responses.map((response, i) => this.wireResult(response, tensors, call.requests[i]));
        call.resolve({ results, computeStartMs: call.startMs, computeEndMs: now() });
        return;
      }
      case 'failed': {
        const error = serializeError(this.modelError(message.error));
        const call = this.calls.get(message.id);
        if (call) {
          this.calls.delete(message.id);
          call.resolve({ results: call.requests.map(() => ({ ok: false, error })), computeStartMs: call.startMs, computeEndMs: now() });
        }
        this.streams.get(message.id)?.channel.push({ kind: 'error', error });
        return;
      }
      case 'response': {
        const stream = this.streams.get(message.id);
        if (!stream) return;
        if (message.response) {
          const result = this.wireResult(message.response, tensors, stream.request);
          if (!result.ok) stream.channel.push({ kind: 'error', error: result.error });
          else stream.channel.push({ kind: 'chunk', value: { result: result.value as TensorWireResult, final: message.final } satisfies StreamedResult });
        }
        if (message.final) stream.channel.push({ kind: 'end' });
        return;
      }
      case 'bls':
        void this.answerBls(message, tensors);
        return;
      case 'log':
        this.plan.launch.logger[message.level](this.plan.launch.logFields, message.message);
        return;
      case 'metric':
      case 'metric-family':
        try {
          this.services.metric(message);
        } catch (err) {
          // A metric call that does not fit its family is the model's bug: logged, never a crash of the server.
          this.plan.launch.logger.warn(this.plan.launch.logFields, `custom metric '${message.type === 'metric' ? message.family : message.name}': ${(err as Error).message}`);
        }
        return;
      case 'finalized':
        this.finalized?.(message.error);
        return;
      case 'executed':
        return;
      default:
        onStartMessage(message);
    }
  }

  /** One response of the stub as the engine's result: its outputs checked against config.pbtxt, or its TritonError. */
  private wireResult(response: StubResponse, tensors: Uint8Array, request: TensorWireRequest): WireResult {
    try {
      if ('error' in response) throw this.modelError(response.error);
      const outputs = new Map(tensorsOf(response.outputs, tensors).map((tensor) => [tensor.name, this.checkOutput(tensor)]));
      const missing = request.outputs.find((name) => !outputs.has(name));
      if (missing !== undefined) throw this.executionFailed(`returned no output '${missing}', which the request asked for`);
      const value: TensorWireResult = { outputs: request.outputs.map((name) => outputs.get(name)!), ...(response.parameters && Object.keys(response.parameters).length > 0 ? { parameters: response.parameters } : {}) };
      return { ok: true, value };
    } catch (err) {
      return { ok: false, error: serializeError(err) };
    }
  }

  /**
   * An output must be one config.pbtxt declares. Its datatype and shape are left as the model made
   * them, as Triton's Python backend leaves them (python_backend's examples rely on it: bls_decoupled
   * returns numpy's default INT64 for an INT32 output); the client reads the datatype in the answer.
   */
  private checkOutput(tensor: Tensor): Tensor {
    if (!this.plan.outputs.some((o) => o.name === tensor.name)) throw this.executionFailed(`returned output '${tensor.name}', which config.pbtxt does not declare`);
    return tensor;
  }

  /** BLS: the request reaches the named model through the server's catalogue; its answer or error goes back. */
  private async answerBls(message: Extract<FromStub, { type: 'bls' }>, tensors: Uint8Array): Promise<void> {
    const { id } = message;
    const send = (final: boolean, response?: BlsResponse, error?: unknown): void => {
      this.channel?.send(
        (refs) => ({
          type: 'bls-response', id, final,
          ...(error !== undefined ? { error: blsError(error) } : { response: response ? { outputs: refs[0], ...(response.parameters ? { parameters: response.parameters } : {}) } : null }),
        }),
        response ? [response.outputs] : [],
      );
    };
    try {
      const request: BlsRequest = {
        ...(message.request_id ? { id: message.request_id } : {}),
        inputs: tensorsOf(message.inputs, tensors), outputs: message.outputs, parameters: message.parameters,
        ...(message.timeout > 0 ? { timeoutUs: message.timeout } : {}),
      };
      const version = message.version || undefined;
      if (!message.decoupled) {
        send(true, await this.services.infer(message.model, version, request));
        return;
      }
      let ended = false;
      for await (const response of await this.services.inferStream(message.model, version, request)) {
        ended = response.final === true;
        send(ended, response);
        if (ended) break;
      }
      if (!ended) send(true);
    } catch (err) {
      send(true, undefined, err);
    }
  }

  private modelError(error: StubError): ServeFnError {
    return new ServeFnError('SF_ERR_PYTHON_MODEL_ERROR', createError('SF_ERR_PYTHON_MODEL_ERROR', this.context.modelName, error.message).message, STATUS_BY_TRITON_CODE[error.code] ?? 500);
  }

  private executionFailed(why: string): ServeFnError {
    return createError('SF_ERR_EXECUTION_FAILED', this.context.modelName, 'execute', why);
  }

  private crashed(why: string): ServeFnError {
    return createError('SF_ERR_INSTANCE_CRASHED', this.context.modelName, this.index, why);
  }

  private onDeath(reason: string): void {
    if (this.stopping) {
      this.finalized?.({ message: reason, code: TRITON_INTERNAL });
      return;
    }
    if (!this.child) return;
    this.child = undefined;
    this.channel = undefined;
    const error = this.crashed(reason);
    for (const call of this.calls.values()) call.reject(error);
    this.calls.clear();
    for (const { channel } of this.streams.values()) channel.fail(error);
    this.events.onCrash(this, reason);
  }
}

/** A BLS call's failure as the stub's TritonError: the code of its status, and its message. */
function blsError(err: unknown): StubError {
  return { message: (err as Error)?.message ?? String(err), code: TRITON_CODE_BY_STATUS[statusOf(err)] ?? TRITON_INTERNAL };
}
