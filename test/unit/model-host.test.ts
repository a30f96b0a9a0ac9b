import 'reflect-metadata';
import { Exclude } from 'class-transformer';
import { IsString } from 'class-validator';
import { container, injectable, singleton } from 'tsyringe';
import { describe, expect, it } from 'vitest';
import { Batch, Endpoint, Model, Tensors, WebSocketEndpoint } from '../../src/decorators/index.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import type { ModelContext, RequestInfo, SocketContext } from '../../src/definition/model-context.js';
import { createError, deserializeError, ServeFnError, type SerializedError } from '../../src/errors/index.js';
import type { ExecuteRequest, ExecuteResponse } from '../../src/instance/tensor-model-api.js';
import type { TensorWireResult } from '../../src/wire/tensor-model-plan.js';
import { ModelHost } from '../../src/instance/model-host.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { StreamEvent } from '../../src/wire/stream-channel.js';
import type { ExecuteOutcome, WireRequest, WireRequestInfo, WireResult } from '../../src/wire/wire-format.js';
import { silentLogger } from '../../src/instance/instance-logger.js';
import { settle } from '../helpers/settle.js';

@singleton()
class Vocabulary {
  readonly words = new Set(['hello', 'world']);
}

@injectable()
class Counter {
  count = 0;
}

class Unregistered {
  constructor(readonly url: string) {}
}

class WordRequest {
  @IsString() word!: string;
}

class WordResponse {
  @IsString() word!: string;
  @Exclude() secret = 'internal';
}

const calls: { method: string; args: unknown[] }[] = [];

@Model({ name: 'speller' })
class Speller {
  constructor(
    readonly vocabulary: Vocabulary,
    readonly counter: Counter,
  ) {}

  @Endpoint('/check', { body: WordRequest, response: WordResponse })
  async check(request: WordRequest, info: RequestInfo): Promise<WordResponse | Error> {
    calls.push({ method: 'check', args: [request, info] });
    if (request.word === 'fail') throw createError('SF_ERR_BAD_REQUEST', 'cannot check fail');
    if (request.word === 'return-error') return new Error('returned, not thrown');
    return Object.assign(new WordResponse(), { word: request.word.toUpperCase() });
  }

  @Endpoint('/checks', { body: WordRequest })
  @Batch(8)
  async checks(batch: WordRequest[], infos: RequestInfo[]): Promise<unknown> {
    calls.push({ method: 'checks', args: [batch, infos] });
    const words = batch.map((r) => r.word);
    if (words.includes('throw')) throw new Error('batch exploded');
    if (words.includes('short')) return words.slice(1);
    if (words.includes('object')) return { words };
    return batch.map((r) => (r.word === 'bad' ? createError('SF_ERR_BAD_REQUEST', `unknown word '${r.word}'`) : this.vocabulary.words.has(r.word)));
  }

  @Endpoint('/bytes')
  async bytes(request: { data: Buffer }): Promise<Buffer> {
    calls.push({ method: 'bytes', args: [request] });
    return Buffer.concat([Buffer.from('got:'), request.data]);
  }
}

const initialized: ModelContext[] = [];
let finalized = 0;

@Model({ name: 'lifecycle' })
class WithHooks {
  constructor(readonly vocabulary: Vocabulary) {}

  async initialize(ctx: ModelContext): Promise<void> {
    if (ctx.instanceIndex === 2) throw new Error('weights missing');
    initialized.push(ctx);
  }

  async finalize(): Promise<void> {
    finalized++;
  }

  @Endpoint('/lifecycle') run(): void {}
}

@Model({ name: 'needy' })
class Needy {
  constructor(readonly dependency: Unregistered) {}

  @Endpoint('/needy') run(): void {}
}

function context(instanceIndex: number): ModelContext {
  const unused = (): Promise<never> => Promise.reject(new Error('not used by these tests'));
  return {
    loadModel: unused,
    loadTokenizer: unused,
    infer: unused,
    modelName: 'lifecycle',
    modelVersion: '1',
    instanceName: `lifecycle_${instanceIndex}`,
    instanceIndex,
    instanceCount: 3,
    deviceKind: 'cpu',
    deviceId: 0,
    modelDir: '/models',
    config: {},
    logger: silentLogger(),
  };
}

const info: WireRequestInfo = { requestId: 'r1', params: {}, query: {}, headers: { 'x-test': '1' } };

function wire(payload: unknown): WireRequest {
  return { payload, info };
}

function errorOf(result: WireResult): SerializedError {
  if (result.ok) throw new Error(`expected an error result, got ${JSON.stringify(result.value)}`);
  return result.error;
}

async function run(host: ModelHost, methodName: string, batched: boolean, payloads: unknown[]): Promise<ExecuteOutcome> {
  calls.length = 0;
  return host.execute({ kind: 'endpoint', methodName, batched, requests: payloads.map(wire) });
}

describe('ModelHost.create', () => {
  it('resolves constructor dependencies through tsyringe, sharing singletons between model classes', () => {
    const speller = ModelHost.create(buildDefinition(Speller));
    const hooks = ModelHost.create(buildDefinition(WithHooks));
    const a = (speller as unknown as { instance: Speller }).instance;
    const b = (hooks as unknown as { instance: WithHooks }).instance;
    expect(a.vocabulary).toBeInstanceOf(Vocabulary);
    expect(a.counter).toBeInstanceOf(Counter);
    expect(b.vocabulary).toBe(a.vocabulary);
  });

  it('gives each instance its own copy of a non-singleton service', () => {
    const first = (ModelHost.create(buildDefinition(Speller)) as unknown as { instance: Speller }).instance;
    const second = (ModelHost.create(buildDefinition(Speller)) as unknown as { instance: Speller }).instance;
    expect(second.counter).not.toBe(first.counter);
  });

  it('uses the container it is given, so registrations there are injected', () => {
    const child = container.createChildContainer();
    const vocabulary = new Vocabulary();
    child.registerInstance(Vocabulary, vocabulary);
    const host = ModelHost.create(buildDefinition(Speller), child);
    expect((host as unknown as { instance: Speller }).instance.vocabulary).toBe(vocabulary);
  });

  it("reports a dependency tsyringe cannot build with SF_ERR_DEPENDENCY_UNRESOLVED, the class and tsyringe's reason", () => {
    let error: unknown;
    try {
      ModelHost.create(buildDefinition(Needy));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ServeFnError);
    expect((error as ServeFnError).code).toBe('SF_ERR_DEPENDENCY_UNRESOLVED');
    expect((error as Error).message).toMatch(
      /^Cannot construct model class 'Needy': .*TypeInfo not known for "Unregistered".*\. Make each constructor dependency @injectable\(\) or register it in the container\.$/s,
    );
    expect(((error as Error).cause as Error).message).toMatch(/TypeInfo not known for "Unregistered"/);
  });
});

describe('ModelHost lifecycle hooks', () => {
  it('passes the context to initialize and calls finalize', async () => {
    initialized.length = 0;
    finalized = 0;
    const host = ModelHost.create(buildDefinition(WithHooks));
    const ctx = context(1);
    await host.initialize(ctx);
    expect(initialized).toHaveLength(1);
    expect(initialized[0]).toBe(ctx);
    await host.finalize();
    expect(finalized).toBe(1);
  });

  it('wraps an initialize failure in SF_ERR_INITIALIZE_FAILED naming the model, the instance and the cause', async () => {
    const host = ModelHost.create(buildDefinition(WithHooks));
    const error = await host.initialize(context(2)).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ServeFnError);
    expect((error as ServeFnError).code).toBe('SF_ERR_INITIALIZE_FAILED');
    expect((error as Error).message).toBe("Model 'lifecycle' instance 2 failed in initialize(): weights missing");
    expect((error as Error).cause).toMatchObject({ message: 'weights missing', stack: expect.stringContaining('WithHooks.initialize') });
  });

  it('does nothing for a model without hooks', async () => {
    const host = ModelHost.create(buildDefinition(Speller));
    await expect(host.initialize(context(0))).resolves.toBeUndefined();
    await expect(host.finalize()).resolves.toBeUndefined();
  });
});

describe('ModelHost.execute', () => {
  const host = ModelHost.create(buildDefinition(Speller));

  it('calls an unbatched method once per request with its DTO instance and request info', async () => {
    const outcome = await run(host, 'check', false, [{ word: 'hi' }, { word: 'yo' }]);
    expect(calls.map((c) => c.method)).toEqual(['check', 'check']);
    expect(calls[0].args[0]).toBeInstanceOf(WordRequest);
    expect(calls[0].args[1]).toEqual(info);
    expect(outcome.results).toEqual([
      { ok: true, value: { word: 'HI' } },
      { ok: true, value: { word: 'YO' } },
    ]);
    expect(outcome.computeStartMs).toBeLessThanOrEqual(outcome.computeEndMs);
  });

  it('serialises a response DTO through class-transformer, so @Exclude applies', async () => {
    const [result] = (await run(host, 'check', false, [{ word: 'a' }])).results;
    expect(result).toEqual({ ok: true, value: { word: 'A' } });
  });

  it('keeps the error of one unbatched request to itself, with its code and status', async () => {
    const { results } = await run(host, 'check', false, [{ word: 'fail' }, { word: 'ok' }, { word: 'return-error' }]);
    const failed = deserializeError(errorOf(results[0]));
    expect(failed).toBeInstanceOf(ServeFnError);
    expect((failed as ServeFnError).code).toBe('SF_ERR_BAD_REQUEST');
    expect((failed as ServeFnError).statusCode).toBe(400);
    expect(failed.message).toBe('cannot check fail');
    expect(results[1]).toEqual({ ok: true, value: { word: 'OK' } });
    expect(errorOf(results[2]).message).toBe('returned, not thrown');
  });

  it('calls a batched method once with every request and every info, in order', async () => {
    const { results } = await run(host, 'checks', true, [{ word: 'hello' }, { word: 'nope' }, { word: 'world' }]);
    expect(calls).toHaveLength(1);
    const [batch, infos] = calls[0].args as [WordRequest[], RequestInfo[]];
    expect(batch.map((r) => r.word)).toEqual(['hello', 'nope', 'world']);
    expect(batch.every((r) => r instanceof WordRequest)).toBe(true);
    expect(infos).toEqual([info, info, info]);
    expect(results).toEqual([
      { ok: true, value: true },
      { ok: true, value: false },
      { ok: true, value: true },
    ]);
  });

  it('turns an Error entry of a batch into the error of that request only', async () => {
    const { results } = await run(host, 'checks', true, [{ word: 'hello' }, { word: 'bad' }]);
    expect(results[0]).toEqual({ ok: true, value: true });
    expect(errorOf(results[1])).toMatchObject({ code: 'SF_ERR_BAD_REQUEST', statusCode: 400, message: "unknown word 'bad'" });
  });

  it('rejects the whole batch when the method throws', async () => {
    await expect(run(host, 'checks', true, [{ word: 'hello' }, { word: 'throw' }])).rejects.toThrow('batch exploded');
  });

  it('rejects a result of the wrong length with SF_ERR_BATCH_RESULT_LENGTH naming the method', async () => {
    const error = await run(host, 'checks', true, [{ word: 'short' }, { word: 'x' }, { word: 'y' }]).catch((e: unknown) => e);
    expect((error as ServeFnError).code).toBe('SF_ERR_BATCH_RESULT_LENGTH');
    expect((error as Error).message).toBe(
      'Speller.checks returned 2 results for a batch of 3 requests: a batched method (@Batch, or execute(requests)) must return one result (or Error) per request, in order.',
    );
  });

  it('rejects a result that is not an array with SF_ERR_BATCH_RESULT_NOT_ARRAY naming what came back', async () => {
    const error = await run(host, 'checks', true, [{ word: 'object' }]).catch((e: unknown) => e);
    expect((error as ServeFnError).code).toBe('SF_ERR_BATCH_RESULT_NOT_ARRAY');
    expect((error as Error).message).toBe('Speller.checks must return an array for its batch, got Object.');
  });

  it('gives the method Buffers for bytes that crossed as plain Uint8Arrays, and returns Buffers', async () => {
    const { results } = await run(host, 'bytes', false, [{ data: new Uint8Array([104, 105]) }]);
    const received = (calls[0].args[0] as { data: Buffer }).data;
    expect(Buffer.isBuffer(received)).toBe(true);
    expect(results[0].ok && Buffer.isBuffer(results[0].value) && results[0].value.toString()).toBe('got:hi');
  });

  it('rejects a method that is not an endpoint', async () => {
    const error = await run(host, 'constructor', false, [{}]).catch((e: unknown) => e);
    expect((error as ServeFnError).code).toBe('SF_ERR_EXECUTION_FAILED');
    expect((error as Error).message).toBe("Model 'speller' failed in constructor: no such endpoint method");
  });
});

class Spoken {
  @IsString() word!: string;
  @Exclude() secret = 'internal';
}

@Model({ name: 'speaker' })
class Speaker {
  @Endpoint('/speak', { body: WordRequest, response: Spoken, stream: 'ndjson' })
  async *speak(req: WordRequest): AsyncGenerator<Spoken> {
    for (const letter of req.word) yield Object.assign(new Spoken(), { word: letter });
  }

  @Endpoint('/pcm', { body: WordRequest, stream: 'bytes' })
  async *pcm(req: WordRequest): AsyncGenerator<unknown> {
    yield Buffer.from(req.word);
    yield req.word;
  }
}

describe('ModelHost streams', () => {
  const host = ModelHost.create(buildDefinition(Speaker));
  const call = (methodName: string, word: string) => ({
    kind: 'endpoint' as const,
    methodName,
    batched: false,
    requests: [{ payload: { word }, info: { requestId: 'r1', params: {}, query: {}, headers: {} } }],
  });

  it('streams each item as a plain object through the response DTO', async () => {
    const events: unknown[] = [];
    await host.openStream(call('speak', 'ab'), 10, (e) => events.push(e)).run();
    expect(events).toEqual([{ kind: 'chunk', value: { word: 'a' } }, { kind: 'chunk', value: { word: 'b' } }, { kind: 'end' }]);
  });

  it("ends a bytes stream with SF_ERR_STREAM_CHUNK_NOT_BYTES at the first item that is not bytes", async () => {
    const events: { kind: string; value?: unknown; error?: SerializedError }[] = [];
    await host.openStream(call('pcm', 'hi'), 10, (e) => events.push(e)).run();
    expect(events.map((e) => e.kind)).toEqual(['chunk', 'error']);
    expect([...(events[0].value as Buffer)]).toEqual([104, 105]);
    expect(events[1].error?.code).toBe('SF_ERR_STREAM_CHUNK_NOT_BYTES');
    expect(events[1].error?.message).toBe("Speaker.pcm streams 'bytes' but yielded string: yield Buffer or Uint8Array chunks, or use stream: 'ndjson'.");
  });
});

@Model({ name: 'chatter' })
class Chatter {
  @WebSocketEndpoint('/ws/chat', { message: WordRequest, response: WordResponse })
  async *chat(messages: AsyncIterable<WordRequest | Buffer | string>, ctx: SocketContext): AsyncGenerator<unknown> {
    yield `hello ${ctx.connectionId} on ${ctx.instanceIndex}`;
    for await (const m of messages) {
      if (m instanceof WordRequest) yield Object.assign(new WordResponse(), { word: m.word.toUpperCase() });
      else if (Buffer.isBuffer(m)) yield new Uint8Array([m.length]);
      else yield { unexpected: typeof m };
    }
  }

  @WebSocketEndpoint('/ws/wrong')
  wrong(): string {
    return 'not iterable';
  }
}

describe('ModelHost.openSocket', () => {
  const context = { connectionId: 'req-7', requestId: 'req-7', instanceIndex: 1, params: {}, query: {}, headers: {} };

  it('hands the method DTO instances and Buffers, and sends its items (response DTOs as plain objects) as chunks', async () => {
    const host = ModelHost.create(buildDefinition(Chatter));
    const events: StreamEvent[] = [];
    let taken = 0;
    const session = host.openSocket({ methodName: 'chat', context }, 8, (e) => events.push(e), () => taken++);
    const done = session.run();
    session.deliver({ kind: 'json', value: { word: 'hi' } });
    session.deliver({ kind: 'binary', value: new Uint8Array([1, 2, 3]) });
    session.endInput();
    await done;
    expect(events).toEqual([
      { kind: 'chunk', value: 'hello req-7 on 1' },
      { kind: 'chunk', value: { word: 'HI' } },
      { kind: 'chunk', value: new Uint8Array([3]) },
      { kind: 'end' },
    ]);
    expect(taken).toBe(2);
  });

  it('ends with SF_ERR_STREAM_NOT_ITERABLE when the method returns no async iterable', async () => {
    const host = ModelHost.create(buildDefinition(Chatter));
    const events: StreamEvent[] = [];
    await host.openSocket({ methodName: 'wrong', context }, 8, (e) => events.push(e), () => undefined).run();
    expect(events).toHaveLength(1);
    const { error } = events[0] as Extract<StreamEvent, { kind: 'error' }>;
    expect(error.code).toBe('SF_ERR_STREAM_NOT_ITERABLE');
    expect(error.message).toBe("Chatter.wrong declares stream: 'websocket' but returned string: make it an async generator (`async *wrong(...)`) or return an AsyncIterable.");
  });

  it('stops the method when cancelled while it waits for input', async () => {
    const host = ModelHost.create(buildDefinition(Chatter));
    const events: StreamEvent[] = [];
    const session = host.openSocket({ methodName: 'chat', context }, 8, (e) => events.push(e), () => undefined);
    const done = session.run();
    await settle();
    session.cancel();
    await done;
    expect(events).toEqual([{ kind: 'chunk', value: 'hello req-7 on 1' }, { kind: 'end' }]);
  });
});

@Model({ name: 'summer' })
@Tensors({ inputs: [{ name: 'X', datatype: 'INT32', dims: [2] }], outputs: [{ name: 'SUM', datatype: 'INT32', dims: [1] }] })
class Summer {
  execute(requests: ExecuteRequest[]): ExecuteResponse[] {
    return requests.map((request) => {
      const [a, b] = request.input('X')!.data as Int32Array;
      return request.parameters.extra ? { outputs: [createTensor('EXTRA', 'INT32', [1], Int32Array.of(0))] } : { outputs: [createTensor('SUM', 'INT32', [1], Int32Array.of(a + b))] };
    });
  }
}

describe('ModelHost tensor calls', () => {
  const request = (values: number[], parameters: Record<string, unknown> = {}) => ({ inputs: [createTensor('X', 'INT32', [2], Int32Array.from(values))], outputs: ['SUM'], parameters });

  it("runs every request of a tensor call in one execute, checking each response against @Tensors' outputs", async () => {
    const host = ModelHost.create(buildDefinition(Summer));
    const outcome = await host.execute({ kind: 'tensor', requests: [request([1, 2]), request([3, 4], { extra: true })] });
    const [sum, extra] = outcome.results;
    expect(sum.ok && Array.from((sum.value as TensorWireResult).outputs[0].data as Int32Array)).toEqual([3]);
    expect(errorOf(extra).message).toBe("Model 'summer' failed in execute: returned output 'EXTRA', which @Tensors does not declare");
  });

  it('refuses a tensor call on a class without @Tensors', async () => {
    const host = ModelHost.create(buildDefinition(Speller));
    await expect(host.execute({ kind: 'tensor', requests: [request([1, 2])] })).rejects.toMatchObject({ code: 'SF_ERR_EXECUTION_FAILED' });
  });
});
