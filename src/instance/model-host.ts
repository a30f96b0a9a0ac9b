import { instanceToPlain } from 'class-transformer';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import type { EndpointDefinition, ModelDefinition, SocketEndpointDefinition } from '../definition/model-definition.js';
import type { ModelContext, RequestInfo } from '../definition/model-context.js';
import { createError, deserializeError, serializeError } from '../errors/index.js';
import { runTextForward } from './text-forward-pass.js';
import type { TensorWireResult } from '../wire/tensor-model-plan.js';
import { toTensorSpec } from '../spec/config-tensor.js';
import { EXECUTE_METHOD } from '../definition/tensor-interface-builder.js';
import { timedExecution, type InstanceHost } from './instance-host.js';
import { ModuleExecutor } from './module-executor.js';
import { ClassDecoderRuntime } from './class-decoder-runtime.js';
import { DecoderSteps } from './decoder-steps.js';
import type { DecoderStepHook } from '../spec/decoder-step.js';
import type { DecoderStepCall, TokenizerFileVocabulary } from '../wire/decoder-step-call.js';
import { tokenizerFileVocabulary } from './constraint-vocabulary.js';
import type { TensorModel } from './tensor-model-api.js';
import { type ExecuteCall, type ExecuteOutcome, type OnResult, type SocketCall, type SocketInput, type StreamCall, type TensorCall, type TextForwardCall, type WireRequestInfo, type WireResult, reviveBuffers } from '../wire/wire-format.js';
import { REFUSED_MESSAGE, SocketInbox, SocketSession } from '../wire/socket-session.js';
import { firstTrace, runTraced } from './caller-trace.js';
import { describeValue, oneResultPerRequest } from '../wire/batch-results.js';
import { type StreamEvent, StreamPump } from '../wire/stream-channel.js';
import { toDtoInstance } from '../validation/dto-validator.js';
import { silentLogger, withRequestLogger, type ModelLogger } from './instance-logger.js';

type Hooked = {
  initialize?(ctx: ModelContext): unknown;
  finalize?(): unknown;
} & Record<string, unknown>;

/**
 * One instance of a user's model class and the calls into it. The same code runs inside a worker
 * thread (the default) and on the HTTP thread for `inline` models.
 */
export class ModelHost implements InstanceHost {
  private readonly endpoints: ReadonlyMap<string, EndpointDefinition>;
  private readonly sockets: ReadonlyMap<string, SocketEndpointDefinition>;
  /** Runs tensor calls on `execute` with the repository model.ts engine, when the class declares @Tensors. */
  private readonly tensors?: ModuleExecutor;
  /** Runs decoder steps through the class's step hook, when the class declares @GenerativeModel. */
  private readonly decoderSteps?: DecoderSteps;
  /** ctx.logger, which each request's `info.logger` extends. */
  private logger?: ModelLogger;

  private constructor(
    private readonly definition: ModelDefinition,
    private readonly instance: Hooked,
    grammarVocabulary: TokenizerFileVocabulary | undefined,
  ) {
    this.endpoints = new Map(definition.endpoints.map((e) => [e.methodName, e]));
    this.sockets = new Map(definition.sockets.map((e) => [e.methodName, e]));
    if (definition.generative) {
      const runtime = new ClassDecoderRuntime(instance as unknown as DecoderStepHook, definition.className);
      this.decoderSteps = new DecoderSteps(runtime, tokenizerFileVocabulary(grammarVocabulary));
    }
    if (definition.tensors) this.tensors = ModuleExecutor.forTensorInterface(instance as unknown as TensorModel, definition.tensors, definition.name);
  }

  /**
   * `grammarVocabulary`: for a @GenerativeModel class, the tokenizer.json of its folder, which its
   * grammar engine reads on the first structured output, as a decoder folder's instance does.
   */
  static create(definition: ModelDefinition, container: DependencyContainer = rootContainer.createChildContainer(), grammarVocabulary?: TokenizerFileVocabulary): ModelHost {
    let instance: Hooked;
    try {
      instance = container.resolve(definition.target as unknown as new () => Hooked);
    } catch (err) {
      throw createError('SF_ERR_DEPENDENCY_UNRESOLVED', definition.className, (err as Error).message, { cause: err });
    }
    return new ModelHost(definition, instance, grammarVocabulary);
  }

  async initialize(ctx: ModelContext): Promise<void> {
    this.logger = ctx.logger;
    if (!this.definition.hooks.initialize) return;
    try {
      await this.instance.initialize?.(ctx);
    } catch (err) {
      throw createError('SF_ERR_INITIALIZE_FAILED', this.definition.name, ctx.instanceIndex, (err as Error)?.message ?? String(err), { cause: err });
    }
  }

  async finalize(): Promise<void> {
    if (this.definition.hooks.finalize) await this.instance.finalize?.();
  }

  /**
   * Runs one batch; per-request errors come back as error results, a thrown error fails the batch.
   * An unbatched call's requests run one after another, each reported to `onResult` as it ends.
   */
  async execute(call: ExecuteCall, onResult?: OnResult): Promise<ExecuteOutcome> {
    if (call.kind === 'tensor') return this.executeTensors(call);
    if (call.kind === 'text-forward') return this.executeTextForward(call);
    if (call.kind === 'decoder-step') return this.executeDecoderStep(call);
    if (call.kind === 'tokenize') throw createError('SF_ERR_EXECUTION_FAILED', this.definition.name, call.kind, "a model class's instance hosts no tokenizer");
    const endpoint = this.endpoints.get(call.methodName);
    if (!endpoint) throw createError('SF_ERR_EXECUTION_FAILED', this.definition.name, call.methodName, 'no such endpoint method');
    const method = this.instance[call.methodName] as (...args: unknown[]) => unknown;
    const inputs = call.requests.map((r) => this.toInput(endpoint, r.payload));
    const infos: RequestInfo[] = call.requests.map((r) => this.requestInfo(r.info));
    if (call.batched) {
      return timedExecution(async () => oneResultPerRequest(endpoint.id, await runTraced(firstTrace(call), () => method.call(this.instance, inputs, infos)), inputs.length).map((v) => this.toResult(endpoint, v)));
    }
    return timedExecution(async () => {
      const results: WireResult[] = [];
      for (let i = 0; i < inputs.length; i++) {
        const each = await timedExecution(async () => {
          try {
            return [this.toResult(endpoint, await runTraced(call.traceparents?.[i], () => method.call(this.instance, inputs[i], infos[i])))];
          } catch (err) {
            return [{ ok: false, error: serializeError(err) }];
          }
        });
        results.push(each.results[0]);
        onResult?.(i, each);
      }
      return results;
    });
  }

  /** One scheduler iteration of a @GenerativeModel class: its step hook's logits, sampled here as a decoder folder's are (DecoderSteps). */
  private executeDecoderStep(call: DecoderStepCall): Promise<ExecuteOutcome> {
    const steps = this.decoderSteps;
    if (!steps) throw createError('SF_ERR_EXECUTION_FAILED', this.definition.name, 'decoder-step', 'the class is not a generator');
    return timedExecution(async () => (await steps.run(call)).map((value) => ({ ok: true as const, value })));
  }

  /** One execution of the tensor interface: every request of the call in one `execute(requests)`. */
  private async executeTensors(call: TensorCall): Promise<ExecuteOutcome> {
    if (!this.tensors) throw createError('SF_ERR_EXECUTION_FAILED', this.definition.name, EXECUTE_METHOD, 'the class declares no @Tensors interface');
    const tensors = this.tensors;
    return timedExecution(() => runTraced(firstTrace(call), () => tensors.run(call.requests)));
  }

  /**
   * One forward batch of a @TextModel class: padded here, run through the class's `execute` (token
   * tensors in, `last_hidden_state` or `logits` out), and pooled here, as a folder model's is.
   */
  private async executeTextForward(call: TextForwardCall): Promise<ExecuteOutcome> {
    const tensors = this.definition.tensors;
    const executor = this.tensors;
    if (!executor || !tensors) throw createError('SF_ERR_EXECUTION_FAILED', this.definition.name, EXECUTE_METHOD, 'the class declares no @Tensors interface');
    return timedExecution(() => runTextForward(call, tensors.inputs.map(toTensorSpec), tensors.outputs.map((o) => o.name), async (inputs, outputs) => {
      const [result] = await executor.run([{ inputs, outputs, parameters: {} }]);
      if (!result!.ok) throw deserializeError(result!.error);
      return (result!.value as TensorWireResult).outputs;
    }));
  }

  /**
   * Calls a streaming endpoint's method for one request; the returned pump (started by the caller
   * with `run()`) pulls the method's async iterable as credit allows and emits each item.
   */
  openStream(call: StreamCall, credit: number, emit: (event: StreamEvent) => void): StreamPump {
    const methodName = call.kind === 'endpoint' ? call.methodName : EXECUTE_METHOD;
    const endpoint = call.kind === 'endpoint' ? this.endpoints.get(methodName) : undefined;
    const open = async (): Promise<AsyncIterator<unknown>> => {
      if (!endpoint?.stream || call.kind !== 'endpoint') throw createError('SF_ERR_EXECUTION_FAILED', this.definition.name, methodName, 'no such streaming endpoint method');
      const [request] = call.requests;
      return this.iterate(endpoint, endpoint.stream, [this.toInput(endpoint, request.payload), this.requestInfo(request.info)]);
    };
    return new StreamPump(open, credit, emit, (item) => this.toChunk(endpoint!, item));
  }

  /**
   * Calls a @WebSocketEndpoint method for one connection with the connection's messages; the
   * returned session (started by the caller with `run()`) sends what the method yields.
   */
  openSocket(call: SocketCall, credit: number, emit: (event: StreamEvent) => void, onTaken: () => void): SocketSession {
    const socket = this.sockets.get(call.methodName);
    const inbox = new SocketInbox<unknown>(onTaken);
    const open = async (): Promise<AsyncIterator<unknown>> => {
      if (!socket) throw createError('SF_ERR_EXECUTION_FAILED', this.definition.name, call.methodName, 'no such WebSocket endpoint method');
      return this.iterate(socket, 'websocket', [inbox, this.requestInfo(call.context)]);
    };
    const toChunk = (item: unknown): unknown => (item instanceof Uint8Array || typeof item === 'string' ? item : this.toPlain(socket?.response, item));
    const toMessage = (input: SocketInput): unknown => {
      if (input.kind === 'refused') return REFUSED_MESSAGE;
      if (input.kind === 'binary') return reviveBuffers(input.value);
      return input.kind === 'json' && socket?.message && isObject(input.value) ? toDtoInstance(socket.message, input.value, false) : input.value;
    };
    return new SocketSession(inbox, new StreamPump(open, credit, emit, toChunk), toMessage);
  }

  private requestInfo<I extends WireRequestInfo>(facts: I): I & Pick<RequestInfo, 'logger'> {
    return withRequestLogger(reviveBuffers(facts), (this.logger ??= silentLogger()));
  }

  /** Calls a streaming or WebSocket method and opens the async iterable it must return. */
  private async iterate(target: { readonly id: string; readonly methodName: string }, kind: string, args: readonly unknown[]): Promise<AsyncIterator<unknown>> {
    const method = this.instance[target.methodName] as (...args: unknown[]) => unknown;
    const result = await method.call(this.instance, ...args);
    const iterable = result as Partial<AsyncIterable<unknown>> | null | undefined;
    if (typeof iterable?.[Symbol.asyncIterator] !== 'function') {
      throw createError('SF_ERR_STREAM_NOT_ITERABLE', target.id, kind, describeValue(result), target.methodName);
    }
    return (iterable as AsyncIterable<unknown>)[Symbol.asyncIterator]();
  }

  private toChunk(endpoint: EndpointDefinition, item: unknown): unknown {
    if (endpoint.stream !== 'bytes') return this.toPlain(endpoint.response, item);
    if (!(item instanceof Uint8Array)) throw createError('SF_ERR_STREAM_CHUNK_NOT_BYTES', endpoint.id, describeValue(item));
    return item;
  }

  private toInput(endpoint: EndpointDefinition, payload: unknown): unknown {
    const dto = endpoint.body ?? endpoint.query;
    const revived = reviveBuffers(payload);
    if (!dto || !isObject(revived)) return revived;
    return toDtoInstance(dto, revived, false);
  }

  private toResult(endpoint: EndpointDefinition, value: unknown): WireResult {
    if (value instanceof Error) return { ok: false, error: serializeError(value) };
    return { ok: true, value: this.toPlain(endpoint.response, value) };
  }

  private toPlain(response: EndpointDefinition['response'], value: unknown): unknown {
    return response && isObject(value) && !ArrayBuffer.isView(value) && !isFlatRecord(value) ? instanceToPlain(value) : value;
  }
}

function isObject(value: unknown): value is object {
  return value !== null && typeof value === 'object';
}

/**
 * An object literal of strings, numbers, booleans and nulls, which instanceToPlain would only copy
 * (it reads decorators by the value's class, and Object has none): an echo model's answer, where
 * that copy was a twentieth of the worker's time.
 */
function isFlatRecord(value: object): boolean {
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key in value) {
    const field: unknown = (value as Record<string, unknown>)[key];
    if (field !== null && typeof field === 'object') return false;
    if (typeof field === 'function' || typeof field === 'symbol') return false;
  }
  return true;
}
