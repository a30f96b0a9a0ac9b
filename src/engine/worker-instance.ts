import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { ModelContextData, InferOptions } from '../definition/model-context.js';
import type { InferCall } from '../instance/context-services.js';
import { createError, deserializeError, serializeError } from '../errors/index.js';
import type { TensorModelPlan } from '../wire/tensor-model-plan.js';
import type { TextForwardPlan, TokenizerPlan } from '../wire/tensor-model-plan.js';
import type { DecoderPlan, GeneratorClassPlan } from '../wire/decoder-step-call.js';
import type { InstanceEvents, ModelInstance } from './model-instance.js';
import { forEachMessage, MessageOutbox, type Bundle } from '../wire/message-outbox.js';
import { SocketLink } from '../wire/socket-session.js';
import { StreamChannel, type StreamControl } from '../wire/stream-channel.js';
import { instanceNiceness } from '../instance/thread-priority.js';
import { relayWorkerLog, silentLogger, type ModelLogger } from '../instance/instance-logger.js';
import type { FromWorker, ToWorker, WorkerBootData } from '../wire/worker-messages.js';
import { answersOneByOne, callTransferables, collectTransferables, reviveBuffers, type ExecuteCall, type ExecuteOutcome, type OnResult, type SocketCall, type StreamCall, type WireResult } from '../wire/wire-format.js';

const BOOTSTRAP_URL = new URL('../../loader/worker-bootstrap.mjs', import.meta.url);
const WORKER_ENTRY_URL = new URL(`../instance/worker-entry${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
const requireHere = createRequire(import.meta.url);

interface Pending {
  resolve(outcome: ExecuteOutcome): void;
  reject(err: Error): void;
  /** An unbatched call's results, gathered from its 'result' messages. */
  readonly results?: WireResult[];
  readonly onResult?: OnResult;
}

/** A model instance in its own worker thread, so model code never blocks the HTTP thread. */
export class WorkerInstance implements ModelInstance {
  readonly canQueueBehind = true;
  private worker?: Worker;
  private readonly pending = new Map<number, Pending>();
  private readonly streams = new Map<number, StreamChannel>();
  private readonly sockets = new Map<number, SocketLink>();
  private nextId = 1;
  private stopping = false;
  private finalized?: { resolve(): void; reject(err: Error): void };
  /**
   * Calls dispatched in one turn (a batcher handing out what queued behind a finished call) cross
   * together; a microtask flush sends them before the thread returns to the event loop.
   */
  private readonly outbox = new MessageOutbox<ToWorker>(() => this.worker, queueMicrotask);

  constructor(
    readonly index: number,
    private readonly moduleUrl: string,
    private readonly context: ModelContextData,
    private readonly events: InstanceEvents,
    private readonly infer: InferCall,
    /**
     * A repository model, a text or generative model folder, or a text model's tokenizer to host
     * instead of the decorated class in `moduleUrl`; or, for a @GenerativeModel class, what its host
     * needs besides the class.
     */
    private readonly hosted?: TensorModelPlan | TextForwardPlan | DecoderPlan | GeneratorClassPlan | TokenizerPlan,
    /** The server's logger, which writes the lines of the worker's ctx.logger. */
    private readonly logger: ModelLogger = silentLogger(),
  ) {}

  start(): Promise<void> {
    // Each worker's TypeScript hooks load @swc/core's native addon, which crashes the whole process
    // (SIGSEGV) when a thread that loaded it exits while no other thread holds it. Loading it here
    // keeps it alive for the process, as the CLI's own hooks do; embedders have no such hook.
    requireHere('@swc/core');
    const bootData: WorkerBootData = {
      workerEntry: WORKER_ENTRY_URL.href,
      moduleUrl: this.moduleUrl,
      context: this.context,
      ...hostedBootData(this.hosted),
      niceness: instanceNiceness(),
      logLevel: this.logger.level,
    };
    const worker = new Worker(BOOTSTRAP_URL, { workerData: bootData, name: this.context.instanceName });
    this.worker = worker;
    return new Promise<void>((resolve, reject) => {
      let booted = false;
      worker.on('message', (message: FromWorker) => {
        if (message.type === 'ready') {
          booted = true;
          resolve();
        } else if (message.type === 'init-failed') {
          this.worker = undefined;
          reject(deserializeError(message.error));
          void worker.terminate();
        } else {
          forEachMessage(message, this.onMessage);
        }
      });
      const ended = (reason: string, cause: string): void => {
        if (booted) return this.onDeath(reason);
        this.worker = undefined;
        reject(createError('SF_ERR_INITIALIZE_FAILED', this.context.modelName, this.index, cause));
      };
      worker.on('error', (err) => ended(`uncaught error: ${err.message}`, err.message));
      worker.on('exit', (code) => ended(`worker exited with code ${code}`, `worker exited with code ${code}`));
    });
  }

  execute(call: ExecuteCall, onResult?: OnResult): Promise<ExecuteOutcome> {
    if (!this.worker) return Promise.reject(createError('SF_ERR_INSTANCE_CRASHED', this.context.modelName, this.index, 'not running'));
    const id = this.nextId++;
    return new Promise<ExecuteOutcome>((resolve, reject) => {
      this.pending.set(id, answersOneByOne(call) ? { resolve, reject, results: [], onResult } : { resolve, reject });
      this.outbox.queue({ type: 'execute', id, call }, callTransferables(call), (err) => {
        this.pending.delete(id);
        reject(createError('SF_ERR_BAD_REQUEST', `request cannot be sent to the model: ${err.message}`));
      });
    });
  }

  openStream(call: StreamCall, credit: number): StreamChannel {
    const id = this.nextId++;
    const channel = new StreamChannel(this.flowControl(id));
    this.openChannel(id, channel, { type: 'stream-open', id, call, credit }, callTransferables(call));
    return channel;
  }

  openSocket(call: SocketCall, credit: number): SocketLink {
    const id = this.nextId++;
    const link = new SocketLink(
      {
        ...this.flowControl(id),
        deliver: (input) => this.outbox.send({ type: 'socket-message', id, input }, collectTransferables(input)),
        endInput: () => this.outbox.send({ type: 'socket-end', id }),
      },
      this.index,
    );
    this.openChannel(id, link.output, { type: 'socket-open', id, call, credit }, [], link);
    return link;
  }

  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker || this.stopping) return;
    this.stopping = true;
    try {
      await new Promise<void>((resolve, reject) => {
        this.finalized = { resolve, reject };
        this.outbox.send({ type: 'finalize' });
      });
    } finally {
      await worker.terminate();
      this.worker = undefined;
    }
  }

  /**
   * Registers `channel` (and its socket) under `id` until the channel finishes, then asks the worker
   * to open it; a stopped worker, or a call that cannot be sent, fails the channel instead.
   */
  private openChannel(id: number, channel: StreamChannel, open: ToWorker, transfer: ArrayBuffer[], socket?: SocketLink): void {
    if (!this.worker) {
      channel.fail(createError('SF_ERR_INSTANCE_CRASHED', this.context.modelName, this.index, 'not running'));
      return;
    }
    this.streams.set(id, channel);
    if (socket) this.sockets.set(id, socket);
    void channel.finished.then(() => {
      this.streams.delete(id);
      this.sockets.delete(id);
    });
    try {
      this.outbox.send(open, transfer);
    } catch (err) {
      channel.fail(createError('SF_ERR_BAD_REQUEST', `request cannot be sent to the model: ${(err as Error).message}`));
    }
  }

  private flowControl(id: number): StreamControl {
    return {
      grant: (units) => this.outbox.send({ type: 'stream-credit', id, units }),
      cancel: () => this.outbox.send({ type: 'stream-cancel', id }),
    };
  }

  /** An arrow, so forEachMessage can call it without a closure per message. */
  private readonly onMessage = (message: Exclude<FromWorker, Bundle<FromWorker>>): void => {
    if (message.type === 'infer') {
      this.answerInfer(message.id, message.model, message.input, message.options, message.traceparent);
      return;
    }
    if (message.type === 'log') {
      relayWorkerLog(this.logger, message.line);
      return;
    }
    if (message.type === 'finalized') {
      if (message.error) this.finalized?.reject(this.finalizeError(message.error.message));
      else this.finalized?.resolve();
      return;
    }
    if (message.type === 'socket-taken') {
      this.sockets.get(message.id)?.taken(1);
      return;
    }
    if (message.type === 'stream') {
      const event = message.event;
      this.streams.get(message.id)?.push(event.kind === 'chunk' ? { kind: 'chunk', value: reviveBuffers(event.value) } : event);
      return;
    }
    if (message.type !== 'outcome' && message.type !== 'failed' && message.type !== 'result') return;
    const pending = this.pending.get(message.id);
    if (!pending) return;
    if (message.type === 'result') {
      const outcome = { ...message.outcome, results: message.outcome.results.map(revived) };
      pending.results![message.index] = outcome.results[0];
      pending.onResult?.(message.index, outcome);
      return;
    }
    this.pending.delete(message.id);
    if (message.type === 'outcome') {
      pending.resolve({ ...message.outcome, results: pending.results ?? message.outcome.results.map(revived) });
    } else {
      pending.reject(deserializeError(message.error));
    }
  };

  private answerInfer(id: number, model: string, input: unknown, options: InferOptions, traceparent: string | undefined): void {
    this.infer(model, reviveBuffers(input), options, traceparent).then(
      (value) => {
        try {
          this.outbox.send({ type: 'infer-result', id, value }, collectTransferables(value));
        } catch (err) {
          this.outbox.send({ type: 'infer-result', id, error: serializeError(err) });
        }
      },
      (err: unknown) => this.outbox.send({ type: 'infer-result', id, error: serializeError(err) }),
    );
  }

  private finalizeError(why: string): Error {
    return createError('SF_ERR_FINALIZE_FAILED', this.context.modelName, this.index, why);
  }

  private onDeath(reason: string): void {
    if (this.stopping) {
      this.finalized?.reject(this.finalizeError(reason));
      return;
    }
    if (!this.worker) return;
    this.worker = undefined;
    const error = createError('SF_ERR_INSTANCE_CRASHED', this.context.modelName, this.index, reason);
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
    for (const channel of this.streams.values()) channel.fail(error);
    this.events.onCrash(this, reason);
  }
}

function revived(result: WireResult): WireResult {
  return result.ok ? { ok: true, value: reviveBuffers(result.value) } : result;
}

/** Where the boot data carries what the worker hosts (worker-entry.ts reads one of these fields). */
function hostedBootData(hosted: TensorModelPlan | TextForwardPlan | DecoderPlan | GeneratorClassPlan | TokenizerPlan | undefined): Partial<WorkerBootData> {
  if (hosted?.kind === 'text-forward') return { textForward: hosted };
  if (hosted?.kind === 'decoder') return { decoder: hosted };
  if (hosted?.kind === 'generator-class') return { generatorClass: hosted };
  if (hosted?.kind === 'tokenizer') return { tokenizer: hosted };
  return { tensorModel: hosted };
}
