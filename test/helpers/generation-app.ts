import Fastify, { type FastifyInstance } from 'fastify';
import type { ServedGenerator } from '../../src/generation/text-generator.js';
import { registerGenerationRoutes } from '../../src/protocol/openai/generation-routes.js';

/** The generation routes alone over the given generators, on a bare fastify app. */
export async function generationApp(generators: readonly ServedGenerator[], setup?: (app: FastifyInstance) => void): Promise<FastifyInstance> {
  const app = Fastify();
  setup?.(app);
  await registerGenerationRoutes(app, generators, { serverVersion: '9.9.9', bodyLimit: 1_000_000 });
  await app.ready();
  return app;
}

/** The `data:` payloads of an SSE body, in order (`[DONE]` as the string). */
export function sseData(body: string): unknown[] {
  return body
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length))
    .map((data) => (data === '[DONE]' ? data : JSON.parse(data)));
}
