import 'reflect-metadata';
import { Allow, IsInt, IsString } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, Model, WebSocketEndpoint } from '../../src/decorators/index.js';
import { buildDefinition, buildDefinitions, isModelClass } from '../../src/definition/definition-builder.js';
import type { ModelClass } from '../../src/definition/model-definition.js';
import { ServeFnError, type SfErrorCode } from '../../src/errors/index.js';
import type { HttpMethod } from '../../src/metadata/records.js';

class TextRequest {
  @IsString() text!: string;
}

class PageQuery {
  @IsInt() page!: number;
}

class VoiceParams {
  @IsString() id!: string;
}

class TextResponse {
  @IsString() text!: string;
}

/** Runs `build`, expects a ServeFnError with `code`, and returns its message for content checks. */
function failure(build: () => unknown, code: SfErrorCode): string {
  try {
    build();
  } catch (err) {
    expect(err).toBeInstanceOf(ServeFnError);
    expect((err as ServeFnError).code).toBe(code);
    expect((err as ServeFnError).statusCode).toBe(500);
    return (err as Error).message;
  }
  throw new Error(`expected ${code}, but the definition was built`);
}

describe('buildDefinition', () => {
  it('freezes a complete definition with every default filled in', () => {
    @Model({ name: 'echo' })
    class Echo {
      @Endpoint('/echo')
      async echo(): Promise<void> {}
    }
    const def = buildDefinition(Echo);
    expect(def).toEqual({
      name: 'echo',
      version: '1',
      description: undefined,
      className: 'Echo',
      target: Echo,
      instances: { count: 1, kind: 'cpu', devices: [0], inline: false },
      endpoints: [
        {
          id: 'Echo.echo',
          methodName: 'echo',
          httpMethod: 'POST',
          path: '/echo',
          body: undefined,
          query: undefined,
          params: undefined,
          response: undefined,
          consumes: 'json',
          produces: 'application/octet-stream',
          summary: undefined,
          description: undefined,
          tags: ['echo'],
          status: 200,
          batch: undefined,
        },
      ],
      sockets: [],
      hooks: { initialize: false, finalize: false },
    });
    expect(Object.isFrozen(def)).toBe(true);
    expect(Object.isFrozen(def.endpoints)).toBe(true);
    expect(Object.isFrozen(def.endpoints[0])).toBe(true);
    expect(Object.isFrozen(def.endpoints[0].tags)).toBe(true);
    expect(Object.isFrozen(def.instances)).toBe(true);
    expect(Object.isFrozen(def.instances.devices)).toBe(true);
  });

  it('carries every endpoint option, the hooks, the instance group and the normalised batch policy', () => {
    @Model({ name: 'tts', version: '2', description: 'speech', tag: 'audio' })
    @Instances(3, { kind: 'gpu', devices: [2, 5], inline: true })
    class Tts {
      async initialize(): Promise<void> {}
      async finalize(): Promise<void> {}

      @Endpoint('/speak', { body: TextRequest, response: TextResponse, consumes: 'multipart', produces: 'audio/wav', summary: 's', description: 'd', status: 201 })
      @Batch(8, 5000)
      async speak(batch: TextRequest[]): Promise<Buffer[]> {
        return batch.map(() => Buffer.alloc(0));
      }

      @Endpoint('/voices', { method: 'get' as HttpMethod, query: PageQuery, tags: ['voices', 'admin'] })
      async voices(): Promise<string[]> {
        return [];
      }

      @Endpoint('/voices/:id', { method: 'DELETE', params: VoiceParams })
      async remove(): Promise<void> {}
    }
    const def = buildDefinition(Tts);
    expect(def.version).toBe('2');
    expect(def.description).toBe('speech');
    expect(def.hooks).toEqual({ initialize: true, finalize: true });
    expect(def.instances).toEqual({ count: 3, kind: 'gpu', devices: [2, 5], inline: true });
    const [speak, voices, remove] = def.endpoints;
    expect(speak).toMatchObject({
      id: 'Tts.speak',
      httpMethod: 'POST',
      body: TextRequest,
      response: TextResponse,
      consumes: 'multipart',
      produces: 'audio/wav',
      summary: 's',
      description: 'd',
      tags: ['audio'],
      status: 201,
    });
    expect(speak.batch).toMatchObject({ maxBatchSize: 8, maxQueueDelayUs: 5000, preferredBatchSizes: [], priorityLevels: 0 });
    expect(voices).toMatchObject({ httpMethod: 'GET', query: PageQuery, tags: ['voices', 'admin'], batch: undefined });
    expect(remove).toMatchObject({ httpMethod: 'DELETE', path: '/voices/:id', params: VoiceParams });
  });

  it('reports a class without @Model, naming the class and the decorator to add', () => {
    class Bare {}
    const message = failure(() => buildDefinition(Bare), 'SF_ERR_MODEL_NOT_DECORATED');
    expect(message).toBe("Class 'Bare' is not a model: decorate it with @Model({ name: '...' }).");
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '' }],
    ['a blank name', { name: '   ' }],
  ])('reports a model with %s, naming the class and the fix', (_, options) => {
    @Model(options as { name: string })
    class Nameless {}
    const message = failure(() => buildDefinition(Nameless), 'SF_ERR_MODEL_NAME_MISSING');
    expect(message).toBe("Model class 'Nameless' has no name: pass @Model({ name: '...' }).");
  });

  it('reports @Batch on a method whose parameter is not an array, naming class, method and the list signature', () => {
    @Model({ name: 'm' })
    class NotAList {
      @Endpoint('/speak', { body: TextRequest })
      @Batch(4)
      async speak(request: TextRequest): Promise<string> {
        return request.text;
      }
    }
    const message = failure(() => buildDefinition(NotAList), 'SF_ERR_BATCH_NOT_LIST');
    expect(message).toBe(
      'NotAList.speak has @Batch but its parameter is not an array: declare it as `(batch: TextRequest[])`, and return an array of the same length.',
    );
  });

  it('names a generic request type in the list signature when the endpoint has no DTO', () => {
    @Model({ name: 'm' })
    class NoParam {
      @Endpoint('/run')
      @Batch(4)
      async run(): Promise<string[]> {
        return [];
      }
    }
    expect(failure(() => buildDefinition(NoParam), 'SF_ERR_BATCH_NOT_LIST')).toContain('`(batch: Request[])`');
  });

  it.each([
    [0, '0'],
    [-2, '-2'],
    [2.5, '2.5'],
  ])('reports @Batch max size %s, naming class and method and the valid range', (size, shown) => {
    @Model({ name: 'm' })
    class BadSize {
      @Endpoint('/run')
      @Batch(size)
      async run(batch: TextRequest[]): Promise<string[]> {
        return batch.map((r) => r.text);
      }
    }
    const message = failure(() => buildDefinition(BadSize), 'SF_ERR_BATCH_SIZE_INVALID');
    expect(message).toBe(`BadSize.run: @Batch max size must be an integer >= 1 (got ${shown}).`);
  });

  it('reports a misspelt @Batch option with the known options', () => {
    @Model({ name: 'm' })
    class Misspelt {
      @Endpoint('/run')
      @Batch({ maxBatchSize: 4, maxQueueDelayMs: 5 } as never)
      async run(batch: TextRequest[]): Promise<string[]> {
        return batch.map((r) => r.text);
      }
    }
    const message = failure(() => buildDefinition(Misspelt), 'SF_ERR_BATCH_OPTION_INVALID');
    expect(message).toMatch(/^Misspelt\.run: @Batch option maxQueueDelayMs is invalid: is not a known option \(known: maxBatchSize, maxQueueDelayUs, /);
  });

  it('reports @Batch without @Endpoint, naming class and method and the decorator to add', () => {
    @Model({ name: 'm' })
    class Unrouted {
      @Endpoint('/other')
      async other(): Promise<void> {}

      @Batch(4)
      async lonely(batch: TextRequest[]): Promise<string[]> {
        return batch.map((r) => r.text);
      }
    }
    const message = failure(() => buildDefinition(Unrouted), 'SF_ERR_BATCH_WITHOUT_ENDPOINT');
    expect(message).toBe('Unrouted.lonely has @Batch but no @Endpoint: add @Endpoint(path) so requests can reach it.');
  });

  it('reports an HTTP method serve-fn does not route, naming class, method and the allowed ones', () => {
    @Model({ name: 'm' })
    class Patchy {
      @Endpoint('/item', { method: 'PATCH' as HttpMethod })
      async patch(): Promise<void> {}
    }
    const message = failure(() => buildDefinition(Patchy), 'SF_ERR_ENDPOINT_METHOD_INVALID');
    expect(message).toBe("Endpoint Patchy.patch uses HTTP method 'PATCH'; use GET, POST, PUT or DELETE.");
  });

  it('carries an endpoint bodyLimit, and refuses one that is not a whole number of bytes >= 1 or is on a multipart endpoint', () => {
    @Model({ name: 'm' })
    class Limited {
      @Endpoint('/big', { bodyLimit: 8 * 1024 * 1024 })
      async big(): Promise<void> {}

      @Endpoint('/default')
      async plain(): Promise<void> {}
    }
    const [big, plain] = buildDefinition(Limited).endpoints;
    expect(big.bodyLimit).toBe(8 * 1024 * 1024);
    expect(plain).not.toHaveProperty('bodyLimit');

    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1024' as unknown as number]) {
      @Model({ name: 'm' })
      class Bad {
        @Endpoint('/x', { bodyLimit: bad })
        async x(): Promise<void> {}
      }
      expect(failure(() => buildDefinition(Bad), 'SF_ERR_ENDPOINT_OPTION_INVALID')).toBe(`Bad.x: @Endpoint option bodyLimit is invalid: expected a whole number of bytes >= 1, got ${String(bad)}.`);
    }
    @Model({ name: 'm' })
    class Upload {
      @Endpoint('/upload', { consumes: 'multipart', bodyLimit: 1024 })
      async upload(): Promise<void> {}
    }
    expect(failure(() => buildDefinition(Upload), 'SF_ERR_ENDPOINT_OPTION_INVALID')).toBe(
      "Upload.upload: @Endpoint option bodyLimit is invalid: it limits JSON bodies; a multipart endpoint's files and fields keep the server's bodyLimit.",
    );
  });

  it("reports a path without a leading '/', naming the path, class and method", () => {
    @Model({ name: 'm' })
    class Slashless {
      @Endpoint('predict')
      async predict(): Promise<void> {}
    }
    const message = failure(() => buildDefinition(Slashless), 'SF_ERR_ENDPOINT_PATH_INVALID');
    expect(message).toBe("Endpoint path 'predict' on Slashless.predict must start with '/'.");
  });

  it('reports @Endpoint on a getter', () => {
    @Model({ name: 'm' })
    class Getter {
      @Endpoint('/value')
      get value(): number {
        return 1;
      }
    }
    const message = failure(() => buildDefinition(Getter), 'SF_ERR_ENDPOINT_NOT_A_METHOD');
    expect(message).toBe('Getter.value is decorated with @Endpoint but is not a method of the class.');
  });

  it('reports @Endpoint on a class field that holds a function', () => {
    @Model({ name: 'm' })
    class Field {
      // @ts-expect-error -- TypeScript rejects this, but SWC (used by `serve-fn dev`) compiles it unchecked.
      @Endpoint('/field') handler = (): number => 1;
    }
    expect(failure(() => buildDefinition(Field), 'SF_ERR_ENDPOINT_NOT_A_METHOD')).toBe(
      'Field.handler is decorated with @Endpoint but is not a method of the class.',
    );
  });

  it.each([
    [0, 'count must be an integer >= 1 (got 0)'],
    [1.5, 'count must be an integer >= 1 (got 1.5)'],
  ])('reports @Instances count %s, naming the class and the valid range', (count, reason) => {
    @Model({ name: 'm' })
    @Instances(count)
    class Counted {}
    expect(failure(() => buildDefinition(Counted), 'SF_ERR_INSTANCES_INVALID')).toBe(`Counted: @Instances ${reason}.`);
  });

  it('reports an unknown instance kind and an empty or negative device list', () => {
    @Model({ name: 'm' })
    @Instances(1, { kind: 'tpu' as 'cpu' })
    class Tpu {}
    expect(failure(() => buildDefinition(Tpu), 'SF_ERR_INSTANCES_INVALID')).toBe("Tpu: @Instances kind must be 'cpu', 'gpu' or 'npu' (got 'tpu').");

    @Model({ name: 'm' })
    @Instances(1, { devices: [] })
    class NoDevices {}
    expect(failure(() => buildDefinition(NoDevices), 'SF_ERR_INSTANCES_INVALID')).toBe(
      'NoDevices: @Instances devices must be a non-empty list of device ids >= 0.',
    );

    @Model({ name: 'm' })
    @Instances(1, { devices: [0, -1] })
    class NegativeDevice {}
    expect(failure(() => buildDefinition(NegativeDevice), 'SF_ERR_INSTANCES_INVALID')).toContain('NegativeDevice: @Instances devices');
  });

  it('reads a restartLimit into the restart policy, and reports a malformed one', () => {
    @Model({ name: 'm' })
    @Instances(2, { restartLimit: '3/30s' })
    class Limited {
      @Endpoint('/limited')
      async run(): Promise<number> {
        return 1;
      }
    }
    expect(buildDefinition(Limited).instances.restartPolicy).toEqual({ maxRestarts: 3, windowMs: 30_000 });

    @Model({ name: 'm' })
    @Instances(1, { restartLimit: 'often' })
    class Often {}
    expect(failure(() => buildDefinition(Often), 'SF_ERR_INSTANCES_INVALID')).toMatch(/^Often: @Instances restartLimit must be '<restarts>\/<window>' .* \(got 'often'\)\.$/);
  });

  it('reports a lifecycle hook that is not a method', () => {
    @Model({ name: 'm' })
    class HookValue {}
    Object.defineProperty(HookValue.prototype, 'initialize', { value: 'soon' });
    expect(failure(() => buildDefinition(HookValue), 'SF_ERR_HOOK_NOT_FUNCTION')).toBe('HookValue.initialize must be a method (it is a string).');
  });
});

describe('buildDefinitions', () => {
  it('reports two endpoints of one class on one route, naming both methods and the fix', () => {
    @Model({ name: 'm' })
    class Twice {
      @Endpoint('/a')
      async first(): Promise<void> {}

      @Endpoint('/a', { method: 'POST' })
      async second(): Promise<void> {}
    }
    const message = failure(() => buildDefinitions([Twice]), 'SF_ERR_ENDPOINT_DUPLICATE');
    expect(message).toBe('Endpoint POST /a is declared twice: by Twice.first and by Twice.second. Give each method its own path or HTTP method.');
  });

  it('reports the same route declared by two models', () => {
    @Model({ name: 'left' })
    class Left {
      @Endpoint('/predict')
      async predict(): Promise<void> {}
    }
    @Model({ name: 'right' })
    class Right {
      @Endpoint('/predict')
      async infer(): Promise<void> {}
    }
    const message = failure(() => buildDefinitions([Left, Right]), 'SF_ERR_ENDPOINT_DUPLICATE');
    expect(message).toBe('Endpoint POST /predict is declared twice: by Left.predict and by Right.infer. Give each method its own path or HTTP method.');
  });

  it('treats path parameters with different names, and a trailing slash, as the same route', () => {
    @Model({ name: 'm' })
    class Params {
      @Endpoint('/a/:id', { method: 'GET' })
      async byId(): Promise<void> {}

      @Endpoint('/a/:name/', { method: 'GET' })
      async byName(): Promise<void> {}
    }
    const message = failure(() => buildDefinitions([Params]), 'SF_ERR_ENDPOINT_DUPLICATE');
    expect(message).toBe('Endpoint GET /a/:name/ is declared twice: by Params.byId and by Params.byName. Give each method its own path or HTTP method.');
  });

  it('accepts one path under different HTTP methods, and different paths under one method', () => {
    @Model({ name: 'm' })
    class Crud {
      @Endpoint('/items/:id', { method: 'GET' })
      async read(): Promise<void> {}

      @Endpoint('/items/:id', { method: 'PUT' })
      async write(): Promise<void> {}

      @Endpoint('/items/:id', { method: 'DELETE' })
      async remove(): Promise<void> {}

      @Endpoint('/items/:id/tags', { method: 'GET' })
      async tags(): Promise<void> {}
    }
    const [def] = buildDefinitions([Crud]);
    expect(def.endpoints.map((e) => `${e.httpMethod} ${e.path}`)).toEqual([
      'GET /items/:id',
      'PUT /items/:id',
      'DELETE /items/:id',
      'GET /items/:id/tags',
    ]);
  });

  it('reports two models with the same name and version, and accepts distinct versions', () => {
    @Model({ name: 'same', version: '1' })
    class One {
      @Endpoint('/one') run() {}
    }
    @Model({ name: 'same', version: '1' })
    class Other {
      @Endpoint('/other') run() {}
    }
    @Model({ name: 'same', version: '2' })
    class Newer {
      @Endpoint('/newer') run() {}
    }
    expect(failure(() => buildDefinitions([One, Other]), 'SF_ERR_MODEL_DUPLICATE')).toBe(
      "Two model classes are named 'same' (version '1'): give each @Model a distinct name or version.",
    );
    expect(buildDefinitions([One, Newer]).map((d) => `${d.name}@${d.version}`)).toEqual(['same@1', 'same@2']);
  });

  it('returns a frozen list in the order of the classes', () => {
    @Model({ name: 'b' })
    class B {
      @Endpoint('/b') run() {}
    }
    @Model({ name: 'a' })
    class A {
      @Endpoint('/a') run() {}
    }
    const defs = buildDefinitions([B, A]);
    expect(defs.map((d) => d.className)).toEqual(['B', 'A']);
    expect(Object.isFrozen(defs)).toBe(true);
  });
});

describe('isModelClass', () => {
  it('is true only for classes decorated with @Model', () => {
    @Model({ name: 'yes' })
    class Yes {}
    class No {}
    expect(isModelClass(Yes)).toBe(true);
    expect(isModelClass(No)).toBe(false);
    expect(isModelClass({ name: 'yes' })).toBe(false);
    expect(isModelClass(undefined)).toBe(false);
    expect(isModelClass(Yes as unknown as ModelClass)).toBe(true);
  });
});

describe('streaming endpoints', () => {
  it('records the stream format', () => {
    @Model({ name: 'talker' })
    class Talker {
      @Endpoint('/talk', { body: TextRequest, stream: 'sse' })
      async *talk(): AsyncGenerator<string> {
        yield 'hi';
      }
    }
    expect(buildDefinition(Talker).endpoints[0].stream).toBe('sse');
  });

  it('refuses @Batch on a streaming endpoint, naming class, method and fix', () => {
    @Model({ name: 'batched-talker' })
    class BatchedTalker {
      @Endpoint('/talk', { body: TextRequest, stream: 'ndjson' })
      @Batch(4)
      async *talk(batch: TextRequest[]): AsyncGenerator<string> {
        yield batch[0].text;
      }
    }
    expect(failure(() => buildDefinition(BatchedTalker), 'SF_ERR_STREAM_BATCHED')).toBe(
      "BatchedTalker.talk has @Batch and stream: 'ndjson': streaming endpoints are not batched. Remove @Batch, or the stream option.",
    );
  });

  it('refuses an unknown stream format', () => {
    @Model({ name: 'odd-talker' })
    class OddTalker {
      @Endpoint('/talk', { stream: 'xml' as 'sse' })
      async *talk(): AsyncGenerator<string> {
        yield 'hi';
      }
    }
    expect(failure(() => buildDefinition(OddTalker), 'SF_ERR_STREAM_FORMAT_INVALID')).toBe("OddTalker.talk: stream must be 'sse', 'ndjson' or 'bytes' (got 'xml').");
  });
});

describe('DTOs', () => {
  class Undecorated {
    label!: string;
  }

  it.each([
    ['body', 'every field of the request body would be dropped'],
    ['query', 'every query parameter would be dropped'],
    ['params', 'every path parameter would be dropped'],
    ['response', 'its fields would be neither documented nor sent'],
  ] as const)('refuses a %s DTO without class-validator decorators, naming class, method and the decorator to add', (role, consequence) => {
    @Model({ name: 'scorer' })
    class Scorer {
      @Endpoint('/score/:id', { [role]: Undecorated })
      score() {}
    }
    expect(failure(() => buildDefinition(Scorer), 'SF_ERR_DTO_NOT_DECORATED')).toBe(
      `Scorer.score: the ${role} DTO 'Undecorated' has no class-validator decorators, so ${consequence}. ` +
        'Decorate each of its fields, e.g. `@IsString() label!: string`, or `@Allow()` for a field taken as it is.',
    );
  });

  it('refuses undecorated WebSocket message and response DTOs', () => {
    @Model({ name: 'chat' })
    class Chat {
      @WebSocketEndpoint('/ws', { message: Undecorated })
      async *talk(): AsyncGenerator<string> {}
    }
    @Model({ name: 'chat-out' })
    class ChatOut {
      @WebSocketEndpoint('/ws', { message: TextRequest, response: Undecorated })
      async *talk(): AsyncGenerator<string> {}
    }
    expect(failure(() => buildDefinition(Chat), 'SF_ERR_DTO_NOT_DECORATED')).toContain("Chat.talk: the message DTO 'Undecorated'");
    expect(failure(() => buildDefinition(ChatOut), 'SF_ERR_DTO_NOT_DECORATED')).toContain("ChatOut.talk: the response DTO 'Undecorated'");
  });

  it('accepts a DTO whose rules are inherited, or whose fields are only @Allow()ed', () => {
    class Labelled extends TextResponse {}
    class Anything {
      @Allow() value!: unknown;
    }
    @Model({ name: 'accepting' })
    class Accepting {
      @Endpoint('/a', { body: Labelled, response: Anything })
      run() {}
    }
    expect(buildDefinition(Accepting).endpoints[0]).toMatchObject({ body: Labelled, response: Anything });
  });
});

describe('models without endpoints', () => {
  it('refuses a @Model with no @Endpoint or @WebSocketEndpoint, naming the class and the decorator to add', () => {
    @Model({ name: 'idle' })
    class Idle {
      async initialize() {}
      run() {}
    }
    expect(failure(() => buildDefinition(Idle), 'SF_ERR_MODEL_NO_ENDPOINTS')).toBe(
      "Model class 'Idle' has no @Endpoint or @WebSocketEndpoint method and no @Tensors interface, so it would serve nothing: decorate a method with @Endpoint(path).",
    );
  });

  it('accepts a model served only over WebSocket', () => {
    @Model({ name: 'socket-only' })
    class SocketOnly {
      @WebSocketEndpoint('/ws')
      async *talk(): AsyncGenerator<string> {}
    }
    expect(buildDefinition(SocketOnly).sockets).toHaveLength(1);
  });
});

describe('subclasses', () => {
  class BaseScorer {
    @Endpoint('/score', { body: TextRequest, response: TextResponse })
    @Batch(4)
    score(batch: TextRequest[]): TextResponse[] {
      return batch;
    }

    @Endpoint('/health', { method: 'GET' })
    health(): string {
      return 'base';
    }

    @WebSocketEndpoint('/ws')
    async *talk(): AsyncGenerator<string> {}
  }

  it("serves the base class's decorated methods, with the subclass's name", () => {
    @Model({ name: 'derived' })
    class DerivedScorer extends BaseScorer {}
    const def = buildDefinition(DerivedScorer);
    expect(def.endpoints.map((e) => [e.id, e.httpMethod, e.path, e.batch?.maxBatchSize])).toEqual([
      ['DerivedScorer.score', 'POST', '/score', 4],
      ['DerivedScorer.health', 'GET', '/health', undefined],
    ]);
    expect(def.sockets.map((s) => s.id)).toEqual(['DerivedScorer.talk']);
  });

  it("lets the subclass's own decorators replace the base class's for that method, through a decorated parent too", () => {
    @Model({ name: 'parent' })
    class Parent extends BaseScorer {}
    @Model({ name: 'child' })
    class Child extends Parent {
      @Endpoint('/v2/health', { method: 'GET', summary: 'mine' })
      override health(): string {
        return 'child';
      }

      @Endpoint('/score', { body: TextRequest })
      override score(batch: TextRequest[]): TextResponse[] {
        return batch;
      }
    }
    const def = buildDefinition(Child);
    expect(def.endpoints.map((e) => [e.methodName, e.path, e.summary, e.response, e.batch?.maxBatchSize])).toEqual([
      ['health', '/v2/health', 'mine', undefined, undefined],
      ['score', '/score', undefined, undefined, 4],
    ]);
    expect(buildDefinition(Parent).endpoints.map((e) => e.path)).toEqual(['/score', '/health']);
  });
});

describe('streaming methods', () => {
  it('refuses a stream on an async function or a sync generator, naming class, method and fix', () => {
    @Model({ name: 'once' })
    class Once {
      @Endpoint('/once', { stream: 'sse' })
      async once(): Promise<string> {
        return 'once';
      }
    }
    @Model({ name: 'sync' })
    class Sync {
      @Endpoint('/sync', { stream: 'ndjson' })
      *sync(): Generator<string> {
        yield 'sync';
      }
    }
    expect(failure(() => buildDefinition(Once), 'SF_ERR_STREAM_NOT_GENERATOR')).toBe(
      "Once.once declares stream: 'sse' but is an async function, which resolves once: make it an async generator (`async *once(...)`) that yields each item.",
    );
    expect(failure(() => buildDefinition(Sync), 'SF_ERR_STREAM_NOT_GENERATOR')).toBe(
      "Sync.sync declares stream: 'ndjson' but is a sync generator, which is not async iterable: make it an async generator (`async *sync(...)`) that yields each item.",
    );
  });

  it('accepts a plain method that returns an async iterable', () => {
    @Model({ name: 'relay' })
    class Relay {
      @Endpoint('/relay', { stream: 'ndjson' })
      relay(): AsyncIterable<string> {
        return (async function* () {
          yield 'x';
        })();
      }
    }
    expect(buildDefinition(Relay).endpoints[0].stream).toBe('ndjson');
  });
});
