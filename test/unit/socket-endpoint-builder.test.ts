import 'reflect-metadata';
import { IsString } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { Batch, Endpoint, Model, WebSocketEndpoint } from '../../src/decorators/index.js';
import { buildDefinition, buildDefinitions } from '../../src/definition/definition-builder.js';
import { DEFAULT_SOCKET_IDLE_TIMEOUT_MS, DEFAULT_SOCKET_MAX_CONNECTIONS } from '../../src/definition/socket-endpoint-builder.js';
import { thrown } from '../helpers/thrown.js';

class Hello {
  @IsString() text!: string;
}

describe('buildSocketEndpoint (through buildDefinition)', () => {
  it('freezes path, DTOs, defaults and the model tag', () => {
    @Model({ name: 'talker' })
    class Talker {
      @WebSocketEndpoint('/ws/talk', { message: Hello, summary: 'Talk' })
      async *talk(): AsyncGenerator<object> {}
    }
    const def = buildDefinition(Talker);
    expect(def.sockets).toEqual([
      {
        id: 'Talker.talk',
        methodName: 'talk',
        path: '/ws/talk',
        message: Hello,
        response: undefined,
        idleTimeoutMs: DEFAULT_SOCKET_IDLE_TIMEOUT_MS,
        maxConnections: DEFAULT_SOCKET_MAX_CONNECTIONS,
        summary: 'Talk',
        description: undefined,
        tags: ['talker'],
      },
    ]);
    expect(DEFAULT_SOCKET_IDLE_TIMEOUT_MS).toBe(60_000);
    expect(DEFAULT_SOCKET_MAX_CONNECTIONS).toBe(1024);
    expect(Object.isFrozen(def.sockets)).toBe(true);
    expect(Object.isFrozen(def.sockets[0])).toBe(true);
  });

  it.each([
    ['idleTimeoutMs', { idleTimeoutMs: 0 }, 'expected an integer >= 1, got 0'],
    ['maxConnections', { maxConnections: 2.5 }, 'expected an integer >= 1, got 2.5'],
  ])('refuses %s out of range with SF_ERR_SOCKET_OPTION_INVALID', (option, options, why) => {
    @Model({ name: 'bad' })
    class Bad {
      @WebSocketEndpoint('/ws', options)
      async *talk(): AsyncGenerator<object> {}
    }
    const err = thrown(() => buildDefinition(Bad));
    expect(err.code).toBe('SF_ERR_SOCKET_OPTION_INVALID');
    expect(err.message).toBe(`Bad.talk: @WebSocketEndpoint option ${option} is invalid: ${why}.`);
  });

  it('refuses a path without a leading slash', () => {
    @Model({ name: 'bad' })
    class Bad {
      @WebSocketEndpoint('ws')
      async *talk(): AsyncGenerator<object> {}
    }
    expect(thrown(() => buildDefinition(Bad)).message).toBe("Endpoint path 'ws' on Bad.talk must start with '/'.");
  });

  it('refuses a method that is also an @Endpoint, or batched', () => {
    @Model({ name: 'both' })
    class Both {
      @Endpoint('/talk')
      @WebSocketEndpoint('/ws')
      async *talk(): AsyncGenerator<object> {}
    }
    @Model({ name: 'batched' })
    class Batched {
      @Batch(4)
      @WebSocketEndpoint('/ws')
      async *talk(): AsyncGenerator<object> {}
    }
    expect(thrown(() => buildDefinition(Both)).message).toBe(
      'Both.talk has @WebSocketEndpoint and @Endpoint: a WebSocket method is called once per connection. Give the HTTP route its own method.',
    );
    expect(thrown(() => buildDefinition(Batched)).code).toBe('SF_ERR_SOCKET_AND_ENDPOINT');
    expect(thrown(() => buildDefinition(Batched)).message).toContain('and @Batch');
  });

  it('refuses a decorated field', () => {
    @Model({ name: 'field' })
    class Field {
      // @ts-expect-error -- TypeScript rejects this, but SWC (used by `serve-fn dev`) compiles it unchecked.
      @WebSocketEndpoint('/ws') talk = 'not a method';
    }
    expect(thrown(() => buildDefinition(Field)).message).toBe('Field.talk is decorated with @WebSocketEndpoint but is not a method of the class.');
  });

  it('refuses a WebSocket path that a GET endpoint already uses, in any model', () => {
    @Model({ name: 'pages' })
    class Pages {
      @Endpoint('/live/:id', { method: 'GET' })
      async page(): Promise<string> {
        return '';
      }
    }
    @Model({ name: 'live' })
    class Live {
      @WebSocketEndpoint('/live/:room')
      async *talk(): AsyncGenerator<object> {}
    }
    const err = thrown(() => buildDefinitions([Pages, Live]));
    expect(err.code).toBe('SF_ERR_ENDPOINT_DUPLICATE');
    expect(err.message).toBe('Endpoint GET /live/:room is declared twice: by Pages.page and by Live.talk. Give each method its own path or HTTP method.');
  });
});
