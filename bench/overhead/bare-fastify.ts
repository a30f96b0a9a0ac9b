import fastify from 'fastify';
import { prosody } from './prosody-work.js';

/** The baseline: a plain fastify route doing the quickstart's /prosody work, validated by fastify's own JSON Schema. */
const app = fastify({ logger: false });
app.post(
  '/prosody',
  {
    schema: {
      body: {
        type: 'object',
        required: ['text'],
        properties: { text: { type: 'string', minLength: 1, maxLength: 2000 }, speed: { type: 'number', minimum: 0.25, maximum: 4 } },
      },
      response: {
        200: {
          type: 'object',
          properties: { duration_ms: { type: 'number' }, syllables: { type: 'number' }, words: { type: 'number' }, batch_size: { type: 'number' } },
        },
      },
    },
  },
  async (request) => {
    const body = request.body as { text: string; speed?: number };
    return { ...prosody(body.text, body.speed), batch_size: 1 };
  },
);
app.get('/ready', async () => ({ status: 'ready' }));
const port = Number(process.argv[2] ?? 8300);
await app.listen({ port, host: '127.0.0.1' });
process.stdout.write(`bare fastify ready on ${port}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
