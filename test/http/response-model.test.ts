import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsInt, IsString, ValidateNested } from 'class-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, Model, ServeFnServer } from '../../src/index.js';

/** An endpoint's `response` DTO does what FastAPI's `response_model` does: it documents and filters. */

class LookupRequest {
  @IsString() user!: string;
}

class Owner {
  @IsString() name!: string;
}

class Account {
  @IsString() user!: string;
  @IsInt() credits!: number;
  @ValidateNested() @Type(() => Owner) owner!: Owner;
}

/** What a model might hold next to the answer and must not send. */
const STORED = { credits: 3, passwordHash: 'x9f', owner: { name: 'ada', apiKey: 'sk-1' } };

@Model({ name: 'accounts' })
@Instances(1, { inline: true })
class Accounts {
  @Endpoint('/accounts/lookup', { body: LookupRequest, response: Account })
  lookup(req: LookupRequest): object {
    return { user: req.user, ...STORED };
  }

  @Endpoint('/accounts/batch', { body: LookupRequest, response: Account })
  @Batch(4)
  lookupMany(batch: LookupRequest[]): object[] {
    return batch.map((req) => ({ user: req.user, ...STORED }));
  }
}

let server: ServeFnServer;

beforeAll(async () => {
  server = new ServeFnServer({ models: [Accounts], logger: false, collectProcessMetrics: false });
  await server.start();
});

afterAll(async () => {
  await server.close();
});

describe('response DTO', () => {
  it('documents the answer as the DTO, nested DTOs included', async () => {
    const doc = (await server.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.paths['/accounts/lookup'].post.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Account' });
    expect(Object.keys(doc.components.schemas.Account.properties)).toEqual(['user', 'credits', 'owner']);
    expect(Object.keys(doc.components.schemas.Owner.properties)).toEqual(['name']);
  });

  it.each(['/accounts/lookup', '/accounts/batch'])('sends only the fields the DTO declares, at every depth (%s)', async (url) => {
    const res = await server.app.inject({ method: 'POST', url, payload: { user: 'ada' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ user: 'ada', credits: 3, owner: { name: 'ada' } });
  });
});
