import 'reflect-metadata';
import { IsString } from 'class-validator';
import { container, inject } from 'tsyringe';
import { describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, Model, WebSocketEndpoint } from '../../src/decorators/index.js';
import { BATCH_KEY, ENDPOINTS_KEY, INSTANCES_KEY, MODEL_OPTIONS_KEY, SOCKETS_KEY } from '../../src/metadata/metadata-keys.js';
import { readBatches, readEndpoints, readInstances, readModel, readWebSocketEndpoints } from '../../src/metadata/reflection.js';

class SayRequest {
  @IsString() text!: string;
}

class SayResponse {
  @IsString() said!: string;
}

@Model({ name: 'parrot', version: '3', description: 'repeats', tag: 'birds' })
@Instances(2, { kind: 'npu', devices: [1, 3] })
class Parrot {
  @Endpoint('/say', { body: SayRequest, response: SayResponse, summary: 'say it', status: 201 })
  @Batch(8, 5000)
  async say(batch: SayRequest[]): Promise<SayResponse[]> {
    return batch.map((r) => ({ said: r.text }));
  }

  @Endpoint('/voices/:id', { method: 'DELETE' })
  async remove(): Promise<void> {}

  @Batch({ maxBatchSize: 4, preferredBatchSizes: [2, 4], defaultQueuePolicy: { maxQueueSize: 10 } })
  @Endpoint('/many')
  async many(batch: SayRequest[]): Promise<string[]> {
    return batch.map((r) => r.text);
  }

  @Endpoint('/single')
  @Batch(2)
  async single(request: SayRequest): Promise<string> {
    return request.text;
  }
}

describe('@Model', () => {
  it('records the class name and a copy of the options under its string key', () => {
    expect(readModel(Parrot)).toEqual({
      className: 'Parrot',
      options: { name: 'parrot', version: '3', description: 'repeats', tag: 'birds' },
    });
    expect(Reflect.getOwnMetadata(MODEL_OPTIONS_KEY, Parrot)).toBe(readModel(Parrot));
    expect(MODEL_OPTIONS_KEY).toBe('serve-fn:model');
  });

  it('keeps its own copy of the options object', () => {
    const options = { name: 'first' };
    @Model(options)
    class Copied {}
    options.name = 'changed';
    expect(readModel(Copied)?.options.name).toBe('first');
  });

  it('makes the class injectable, so tsyringe resolves its constructor dependencies', () => {
    class Clock {
      readonly label = 'clock';
    }
    @Model({ name: 'timed' })
    class Timed {
      constructor(readonly clock: Clock) {}
    }
    const resolved = container.createChildContainer().resolve(Timed);
    expect(resolved).toBeInstanceOf(Timed);
    expect(resolved.clock).toBeInstanceOf(Clock);
  });

  it('keeps explicit tsyringe injection tokens working', () => {
    @Model({ name: 'tokened' })
    class Tokened {
      constructor(@inject('greeting') readonly greeting: string) {}
    }
    const child = container.createChildContainer();
    child.register('greeting', { useValue: 'hello' });
    expect(child.resolve(Tokened).greeting).toBe('hello');
  });

  it('records nothing on classes it does not decorate, including subclasses', () => {
    class Plain {}
    class Sub extends Parrot {}
    expect(readModel(Plain)).toBeUndefined();
    expect(readModel(Sub)).toBeUndefined();
    expect(Reflect.getOwnMetadata(ENDPOINTS_KEY, Sub)).toBeUndefined();
  });
});

describe('@Endpoint', () => {
  it('records path, options, and that the member is a method, in declaration order', () => {
    expect(readEndpoints(Parrot)).toEqual([
      {
        method: 'say',
        path: '/say',
        options: { body: SayRequest, response: SayResponse, summary: 'say it', status: 201 },
        isFunction: true,
        kindOfMember: 'function',
      },
      { method: 'remove', path: '/voices/:id', options: { method: 'DELETE' }, isFunction: true, kindOfMember: 'function' },
      { method: 'many', path: '/many', options: {}, isFunction: true, kindOfMember: 'function' },
      { method: 'single', path: '/single', options: {}, isFunction: true, kindOfMember: 'function' },
    ]);
    expect(Reflect.getOwnMetadata(ENDPOINTS_KEY, Parrot)).toHaveLength(4);
  });

  it('records a getter as a member that is not a method', () => {
    class WithGetter {
      @Endpoint('/value')
      get value(): number {
        return 1;
      }
    }
    expect(readEndpoints(WithGetter)).toEqual([
      { method: 'value', path: '/value', options: {}, isFunction: false, kindOfMember: 'function' },
    ]);
  });

  it('records a decorated class field (no property descriptor) as not a method instead of crashing', () => {
    class WithField {
      // @ts-expect-error -- TypeScript rejects this, but SWC (used by `serve-fn dev`) compiles it unchecked.
      @Endpoint('/field') handler = (): number => 1;
    }
    expect(readEndpoints(WithField)).toEqual([
      { method: 'handler', path: '/field', options: {}, isFunction: false, kindOfMember: 'undefined' },
    ]);
  });
});

describe('@Batch', () => {
  it('turns the positional form into maxBatchSize and maxQueueDelayUs', () => {
    expect(readBatches(Parrot).find((b) => b.method === 'say')).toEqual({
      method: 'say',
      policy: { maxBatchSize: 8, maxQueueDelayUs: 5000 },
      firstParamType: Array,
      metadataEmitted: true,
    });
  });

  it('defaults the positional queue delay to 0', () => {
    expect(readBatches(Parrot).find((b) => b.method === 'single')?.policy).toEqual({ maxBatchSize: 2, maxQueueDelayUs: 0 });
  });

  it('records the object form untouched, whichever decorator comes first', () => {
    expect(readBatches(Parrot).find((b) => b.method === 'many')?.policy).toEqual({
      maxBatchSize: 4,
      preferredBatchSizes: [2, 4],
      defaultQueuePolicy: { maxQueueSize: 10 },
    });
  });

  it('records the emitted type of the first parameter, so a non-list signature can be reported', () => {
    const single = readBatches(Parrot).find((b) => b.method === 'single');
    expect(single?.firstParamType).toBe(SayRequest);
    expect(single?.metadataEmitted).toBe(true);
    expect(Reflect.getOwnMetadata(BATCH_KEY, Parrot)).toHaveLength(3);
  });
});

describe('@Instances', () => {
  it('records count and a copy of the options', () => {
    expect(readInstances(Parrot)).toEqual({ count: 2, options: { kind: 'npu', devices: [1, 3] } });
    expect(Reflect.getOwnMetadata(INSTANCES_KEY, Parrot)).toBe(readInstances(Parrot));
  });

  it('is absent when the class does not use it', () => {
    @Model({ name: 'lone' })
    class Lone {}
    expect(readInstances(Lone)).toBeUndefined();
  });
});

describe('@WebSocketEndpoint', () => {
  it('records path, a copy of the options, and whether the member is a method, under its own key', () => {
    const options = { message: SayRequest, idleTimeoutMs: 5000 };
    class Room {
      @WebSocketEndpoint('/ws/room', options)
      async *talk(): AsyncGenerator<object> {}

      // @ts-expect-error -- TypeScript rejects this, but SWC (used by `serve-fn dev`) compiles it unchecked.
      @WebSocketEndpoint('/ws/field') field = 1;
    }
    expect(readWebSocketEndpoints(Room)).toEqual([
      { method: 'talk', path: '/ws/room', options: { message: SayRequest, idleTimeoutMs: 5000 }, isFunction: true },
      { method: 'field', path: '/ws/field', options: {}, isFunction: false },
    ]);
    expect(readWebSocketEndpoints(Room)[0].options).not.toBe(options);
    expect(Reflect.getOwnMetadata(SOCKETS_KEY, Room)).toHaveLength(2);
    expect(readEndpoints(Room)).toEqual([]);
  });
});
