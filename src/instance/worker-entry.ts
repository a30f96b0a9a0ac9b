import { parentPort, workerData } from 'node:worker_threads';
import { buildDefinition, exportedModelClasses } from '../definition/definition-builder.js';
import type { InferOptions } from '../definition/model-context.js';
import type { ModelDefinition } from '../definition/model-definition.js';
import { createError, deserializeError, serializeError } from '../errors/index.js';
import { TensorModelHost } from './tensor-model-host.js';
import { TextForwardHost } from './text-forward-host.js';
import { TokenizerHost } from './tokenizer-host.js';
import { DecoderHost } from './decoder-host.js';
import { ContextServices } from './context-services.js';
import { firstTrace, runTraced } from './caller-trace.js';
import { forEachMessage, MessageOutbox, type Bundle } from '../wire/message-outbox.js';
import type { InstanceHost } from './instance-host.js';
import { ModelHost } from './model-host.js';
import { now } from '../wire/epoch-time.js';
import { lowerThisThreadPriority } from './thread-priority.js';
import { workerRootLogger } from './instance-logger.js';
import type { StreamEvent, StreamPump } from '../wire/stream-channel.js';
import type { SocketSession } from '../wire/socket-session.js';
import type { FromWorker, ToWorker, WorkerBootData } from '../wire/worker-messages.js';
import { answersOneByOne, collectTransferables, reviveBuffers, type ExecuteOutcome } from '../wire/wire-format.js';

/**
 * Main of a model-instance worker thread: imports the user's module in this thread, builds the
 * model's definition from this thread's own copy of the decorators' records, resolves the class
 * through this thread's tsyringe container and serves execute calls one at a time.
 */
const data = workerData as WorkerBootData;
const port = parentPort!;
const inferCalls = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
const streams = new Map<number, StreamPump>();
const sockets = new Map<number, SocketSession>();
let nextInferId = 1;

/**
 * The results of one turn go back together: an unbatched call's requests each end after an await, so
 * a microtask would flush after the first; setImmediate runs once the turn's microtasks are done.
 */
const outbox = new MessageOutbox<FromWorker>(() => port, setImmediate);

/** Sends a call's outcome, or with `index` one unbatched request's; a result that cannot be cloned fails what it was part of. */
function sendOutcome(id: number, outcome: ExecuteOutcome, index?: number): void {
  outbox.queue(index === undefined ? { type: 'outcome', id, outcome } : { type: 'result', id, index, outcome }, collectTransferables(outcome.results), (err) => {
    const method = `${data.context.modelName} endpoint method`;
    const error = serializeError(createError('SF_ERR_RESPONSE_NOT_SERIALIZABLE', method, err.message));
    outbox.send(index === undefined ? { type: 'failed', id, error } : { type: 'result', id, index, outcome: { ...outcome, results: [{ ok: false, error }] } });
  });
}

/**
 * How much model time the results held for the flush may span. An unbatched call runs its requests
 * one after another in one turn, so a held result waits for the next ones: quick calls (an echo, a
 * few µs each) go back together, while a call that took longer than this sends its result at once,
 * so a slow model's requests are still answered each as it ends.
 */
const HOLD_MS = 0.5;

/**
 * After `each` was queued: sends what is held once it spans HOLD_MS of model time. The hold began
 * when the oldest message held was queued (an earlier call's outcome, say, which is no result);
 * held alone, `each` was queued after it ended, so the min counts its own run from its start.
 */
function holdOrFlush(each: ExecuteOutcome): void {
  if (each.computeEndMs - Math.min(outbox.oldestQueuedMs, each.computeStartMs) >= HOLD_MS) outbox.flush();
}

function sendStreamEvent(id: number, event: StreamEvent): void {
  try {
    // Chunks are copied, not transferred: a generator may yield the same buffer again.
    outbox.send({ type: 'stream', id, event });
  } catch (err) {
    throw createError('SF_ERR_RESPONSE_NOT_SERIALIZABLE', `${data.context.modelName} stream`, (err as Error).message);
  }
}

function openStream(message: Extract<ToWorker, { type: 'stream-open' }>): void {
  const id = message.id;
  const pump = host!.openStream(message.call, message.credit, (event) => sendStreamEvent(id, event));
  streams.set(id, pump);
  void runTraced(firstTrace(message.call), () => pump.run()).finally(() => streams.delete(id));
}

function openSocket(message: Extract<ToWorker, { type: 'socket-open' }>): void {
  const id = message.id;
  if (!host?.openSocket) {
    const reason = 'a repository model has no WebSocket endpoints';
    sendStreamEvent(id, { kind: 'error', error: serializeError(createError('SF_ERR_EXECUTION_FAILED', data.context.modelName, message.call.methodName, reason)) });
    return;
  }
  const session = host.openSocket(message.call, message.credit, (event) => sendStreamEvent(id, event), () => outbox.send({ type: 'socket-taken', id }));
  sockets.set(id, session);
  void runTraced(message.call.traceparent, () => session.run()).finally(() => sockets.delete(id));
}

/** ctx.infer from this thread: the HTTP thread owns every model's queue, so the call goes there. */
function inferThroughMain(model: string, input: unknown, options: InferOptions, traceparent?: string): Promise<unknown> {
  const id = nextInferId++;
  return new Promise((resolve, reject) => {
    inferCalls.set(id, { resolve, reject });
    outbox.send({ type: 'infer', id, model, input, options, ...(traceparent && { traceparent }) }, collectTransferables(input));
  });
}

async function findDefinition(): Promise<ModelDefinition> {
  for (const value of exportedModelClasses((await import(data.moduleUrl)) as Record<string, unknown>)) {
    const def = buildDefinition(value);
    if (def.name === data.context.modelName && def.version === data.context.modelVersion) return def;
  }
  throw createError('SF_ERR_ENTRY_NO_MODELS', `${data.moduleUrl} (model '${data.context.modelName}')`);
}

/**
 * Calls run one after another: the pool may queue one full batch on an instance that is still
 * running another (see InstancePool), and it must not start before that one ends.
 */
let lastCall: Promise<unknown> = Promise.resolve();

function execute(message: Extract<ToWorker, { type: 'execute' }>): void {
  lastCall = lastCall.then(() => {
    const takenMs = now();
    // An unbatched call's results went out one by one, their buffers with them.
    const onResult = !answersOneByOne(message.call) ? undefined : (index: number, each: ExecuteOutcome) => {
      sendOutcome(message.id, { ...each, takenMs }, index);
      holdOrFlush(each);
    };
    return host!.execute(message.call, onResult).then(
      (outcome) => sendOutcome(message.id, { ...outcome, takenMs, results: onResult ? [] : outcome.results }),
      (err: unknown) => outbox.queue({ type: 'failed', id: message.id, error: serializeError(err) }, []),
    );
  });
}

const services = new ContextServices(data.context, inferThroughMain, workerRootLogger(data.logLevel, (line) => outbox.send({ type: 'log', line })));
let host: InstanceHost | undefined;

function receive(message: Exclude<ToWorker, Bundle<ToWorker>>): void {
  if (message.type === 'infer-result') {
    const call = inferCalls.get(message.id);
    inferCalls.delete(message.id);
    if (message.error) call?.reject(deserializeError(message.error));
    else call?.resolve(reviveBuffers(message.value));
  } else if (message.type === 'stream-open') {
    openStream(message);
  } else if (message.type === 'stream-credit') {
    (streams.get(message.id) ?? sockets.get(message.id))?.grant(message.units);
  } else if (message.type === 'stream-cancel') {
    (streams.get(message.id) ?? sockets.get(message.id))?.cancel();
  } else if (message.type === 'socket-open') {
    openSocket(message);
  } else if (message.type === 'socket-message') {
    sockets.get(message.id)?.deliver(message.input);
  } else if (message.type === 'socket-end') {
    sockets.get(message.id)?.endInput();
  } else if (message.type === 'execute') {
    execute(message);
  } else {
    host!
      .finalize()
      .finally(() => services.dispose())
      .then(
        () => outbox.send({ type: 'finalized' }),
        (err: unknown) => outbox.send({ type: 'finalized', error: serializeError(err) }),
      );
  }
}

port.on('message', (message: ToWorker) => forEachMessage(message, receive));

(async () => {
  lowerThisThreadPriority(data.niceness);
  if (data.textForward) {
    host = await TextForwardHost.start(data.textForward, services.context);
    return;
  }
  if (data.decoder) {
    host = await DecoderHost.start(data.decoder, services.context);
    return;
  }
  if (data.tokenizer) {
    host = await TokenizerHost.start(data.tokenizer, services.context);
    return;
  }
  if (data.tensorModel) {
    host = await TensorModelHost.start(data.tensorModel, services.context);
    return;
  }
  const created = ModelHost.create(await findDefinition(), undefined, data.generatorClass?.grammarVocabulary);
  await created.initialize(services.context);
  host = created;
})().then(
  () => outbox.send({ type: 'ready' }),
  (err: unknown) => outbox.send({ type: 'init-failed', error: serializeError(err) }),
);
