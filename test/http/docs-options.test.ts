import 'reflect-metadata';
import { IsString } from 'class-validator';
import { afterEach, describe, expect, it } from 'vitest';
import { Endpoint, Instances, Model, ServeFnServer, type ServeOptions } from '../../src/index.js';

class EchoBody {
  @IsString() text!: string;
}

@Model({ name: 'echo' })
@Instances(1, { inline: true })
class Echo {
  @Endpoint('/echo', { body: EchoBody })
  async echo(body: EchoBody): Promise<{ text: string }> {
    return { text: body.text };
  }
}

const KEY = 'sk-0123456789abcdef';
const servers: ServeFnServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(options: Partial<ServeOptions>): Promise<ServeFnServer> {
  const server = new ServeFnServer({ models: [Echo], logger: false, collectProcessMetrics: false, ...options });
  servers.push(server);
  await server.start();
  return server;
}

const status = async (server: ServeFnServer, url: string): Promise<number> => (await server.app.inject({ method: 'GET', url })).statusCode;

describe('docs access', () => {
  it('public: Swagger UI, its assets and /openapi.json answer without the API key, and the endpoints still need it', async () => {
    const server = await serve({ security: { apiKey: KEY }, docs: { access: 'public' } });
    for (const url of ['/docs', '/docs/', '/docs/json', '/docs/static/swagger-ui.css', '/openapi.json']) expect([url, await status(server, url)]).toEqual([url, 200]);
    expect((await server.app.inject({ method: 'POST', url: '/echo', payload: { text: 'hi' } })).statusCode).toBe(401);
    expect(await status(server, '/v2/models/echo')).toBe(401);
  });

  it('off: neither Swagger UI nor /openapi.json is served, and the endpoints answer', async () => {
    const server = await serve({ docs: { access: 'off' } });
    expect(await status(server, '/docs/')).toBe(404);
    expect(await status(server, '/openapi.json')).toBe(404);
    expect((await server.app.inject({ method: 'POST', url: '/echo', payload: { text: 'hi' } })).statusCode).toBe(200);
  });
});

describe('KServe v2 routes in the document', () => {
  type Doc = { paths: Record<string, Record<string, { tags?: string[] }>> };
  const tagsOf = (doc: Doc): Set<string> => new Set(Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((op) => op.tags ?? [])));

  it('lists them under their own tags, shared memory apart from inference', async () => {
    const server = await serve({});
    const doc = (await server.app.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc;
    expect(doc.paths['/v2/systemsharedmemory/status'].get.tags).toEqual(['KServe v2 shared memory']);
    expect(doc.paths['/v2/models/{model}/infer'].post.tags).toEqual(['KServe v2 inference protocol']);
  });

  it('leaves them out with kserveRoutes: false, and they still answer', async () => {
    const server = await serve({ docs: { kserveRoutes: false } });
    const doc = (await server.app.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc;
    expect(Object.keys(doc.paths).filter((path) => path.startsWith('/v2'))).toEqual([]);
    expect([...tagsOf(doc)].sort()).toEqual(['echo', 'health']);
    expect(await status(server, '/v2/health/ready')).toBe(200);
  });
});
