import { createError } from '../../src/errors/index.js';
import type { TensorWireRequest } from '../../src/wire/tensor-model-plan.js';
import type { InstanceEvents, ModelInstance } from '../../src/engine/model-instance.js';
import type { ExecuteCall, ExecuteOutcome } from '../../src/wire/wire-format.js';
import { noStreams } from './no-streams.js';
import { settle } from './settle.js';

/** The requests of a call to a tensor model's instance, which must be a tensor call. */
export function tensorRequests(call: ExecuteCall): readonly TensorWireRequest[] {
  if (call.kind !== 'tensor') throw new Error(`a tensor model got a call of ${call.kind === 'endpoint' ? call.methodName : call.kind}`);
  return call.requests;
}

/**
 * Instances of a tensor model whose executions a test finishes by hand. Each execution's requests
 * are recorded; one holding a request whose id is in `failIds` fails as a backend error would, the
 * others answer each request with its id.
 */
export class ManualTensorInstances {
  /** Each execution: the instance it ran on and the ids of its requests. */
  readonly calls: { instance: number; ids: (string | undefined)[] }[] = [];
  /** The requests of each execution, in the order of `calls`. */
  readonly requests: TensorWireRequest[][] = [];
  readonly events = new Map<number, InstanceEvents>();
  /** The latest instance made for each index (a restart makes a new one). */
  readonly made = new Map<number, ModelInstance>();
  /** Reports the death of instance `index`, as its worker thread would. */
  readonly crash = new Map<number, () => void>();
  failIds = new Set<string>();
  private readonly waiting: (() => void)[] = [];

  factory = (index: number, events: InstanceEvents): ModelInstance => {
    this.events.set(index, events);
    const instance: ModelInstance = {
      ...noStreams,
      index,
      start: async () => undefined,
      stop: async () => undefined,
      execute: (call: ExecuteCall) => {
        const requests = [...tensorRequests(call)];
        this.calls.push({ instance: index, ids: requests.map((r) => r.id) });
        this.requests.push(requests);
        return new Promise<ExecuteOutcome>((resolve, reject) => {
          this.waiting.push(() => {
            if (requests.some((r) => this.failIds.has(r.id!))) reject(createError('SF_ERR_BACKEND_RUN_FAILED', 'onnxruntime', 'm', 'boom'));
            else resolve({ results: requests.map((r) => ({ ok: true, value: { outputs: [], parameters: { id: r.id } } })), computeStartMs: 1, computeEndMs: 2 });
          });
        });
      },
    };
    this.made.set(index, instance);
    this.crash.set(index, () => events.onCrash(instance, 'test crash'));
    return instance;
  };

  /** Lets every waiting execution finish, then waits one turn for the runtime to react. */
  async release(): Promise<void> {
    for (const finish of this.waiting.splice(0)) finish();
    await settle();
  }

  /** Lets every waiting execution finish, and waits long enough for what follows (a sequence's next step) to be sent too. */
  async finish(): Promise<void> {
    await this.release();
    for (let i = 0; i < 2; i++) await settle();
  }

  /** Each execution as `instance: id id ...`. */
  get trace(): string[] {
    return this.calls.map((c) => `${c.instance}: ${c.ids.join(' ')}`);
  }
}
