import 'reflect-metadata';
import { Exclude, Transform, Type } from 'class-transformer';
import { IsInt, IsString, ValidateNested } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { Endpoint, Model } from '../../src/decorators/index.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import type { RequestInfo } from '../../src/definition/model-context.js';
import { ModelHost } from '../../src/instance/model-host.js';
import type { WireRequestInfo, WireResult } from '../../src/wire/wire-format.js';

/** What a model method receives and what goes back, for DTOs with and without class-transformer's decorators. */

class PlainRequest {
  @IsString() text!: string;
  @IsInt() n!: number;
}

class TrimmedRequest {
  @IsString() @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value)) text!: string;
}

class Inner {
  @IsString() name!: string;
}

class NestedRequest {
  @ValidateNested() @Type(() => Inner) inner!: Inner;
}

class LoudRequest {
  @IsString() text!: string;
  get loud(): string {
    return this.text.toUpperCase();
  }
}

class Hidden {
  @IsString() shown = 'yes';
  @Exclude() secret = 'internal';
}

const received: unknown[] = [];

@Model({ name: 'dtos' })
class Dtos {
  @Endpoint('/plain', { body: PlainRequest, response: PlainRequest })
  plain(request: PlainRequest): PlainRequest {
    received.push(request);
    return { text: request.text.toUpperCase(), n: request.n + 1 };
  }

  @Endpoint('/trimmed', { body: TrimmedRequest })
  trimmed(request: TrimmedRequest): string {
    received.push(request);
    return request.text;
  }

  @Endpoint('/nested', { body: NestedRequest })
  nested(request: NestedRequest): boolean {
    received.push(request);
    return request.inner instanceof Inner;
  }

  @Endpoint('/loud', { body: LoudRequest })
  loud(request: LoudRequest): string {
    received.push(request);
    return request.loud;
  }

  @Endpoint('/hidden', { body: PlainRequest, response: PlainRequest })
  hidden(): unknown {
    return { text: 'a', n: 1, extra: new Hidden() };
  }
}

const host = ModelHost.create(buildDefinition(Dtos));
const info: WireRequestInfo = { requestId: 'r1', params: {}, query: {}, headers: {} };

async function call(methodName: string, payload: unknown): Promise<WireResult> {
  received.length = 0;
  const outcome = await host.execute({ kind: 'endpoint', methodName, batched: false, requests: [{ payload, info }] });
  return outcome.results[0];
}

describe('the DTO a model method receives', () => {
  it('is an instance of the DTO class with the validated fields, for a DTO without class-transformer decorators', async () => {
    expect(await call('plain', { text: 'hi', n: 1 })).toEqual({ ok: true, value: { text: 'HI', n: 2 } });
    expect(received[0]).toBeInstanceOf(PlainRequest);
    expect({ ...(received[0] as PlainRequest) }).toEqual({ text: 'hi', n: 1 });
  });

  it('is still transformed by @Transform', async () => {
    expect(await call('trimmed', { text: '  padded  ' })).toEqual({ ok: true, value: 'padded' });
    expect(received[0]).toBeInstanceOf(TrimmedRequest);
  });

  it('still holds instances of @Type classes', async () => {
    expect(await call('nested', { inner: { name: 'x' } })).toEqual({ ok: true, value: true });
  });

  it('is an array of instances for an array, as plainToInstance makes it', async () => {
    await call('plain', [{ text: 'a', n: 1 }]).catch(() => undefined);
    expect(Array.isArray(received[0]) && (received[0] as unknown[]).every((r) => r instanceof PlainRequest)).toBe(true);
  });

  it("keeps the class's getter when the input has a key of its name, as plainToInstance does", async () => {
    expect(await call('loud', { text: 'hi', loud: 'ignored' })).toEqual({ ok: true, value: 'HI' });
  });
});

describe('the answer a model method returns', () => {
  it('still goes through instanceToPlain when it holds a class instance, so @Exclude applies', async () => {
    expect(await call('hidden', {})).toEqual({ ok: true, value: { text: 'a', n: 1, extra: { shown: 'yes' } } });
  });
});
