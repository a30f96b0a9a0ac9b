import fastify from 'fastify';
import multipart from '@fastify/multipart';

/**
 * The baseline of issue 16: plain fastify routes doing the validated echo, validated by fastify's
 * own JSON Schema (the same constraints as the DTO), and the multipart upload read by
 * @fastify/multipart. `--log` turns on fastify's request logging at info, for the logged comparison.
 */
const logged = process.argv.includes('--log');
const app = fastify({ logger: logged ? { level: 'info' } : false });
await app.register(multipart, { limits: { fileSize: 1024 * 1024 } });
const echoSchema = {
  body: {
    type: 'object',
    required: ['text', 'n'],
    properties: { text: { type: 'string', maxLength: 2000 }, n: { type: 'integer', minimum: 0, maximum: 100 } },
  },
  response: { 200: { type: 'object', properties: { text: { type: 'string' }, n: { type: 'integer' } } } },
};
app.post('/echo', { schema: echoSchema }, async (request) => {
  const body = request.body as { text: string; n: number };
  return { text: body.text.toUpperCase(), n: body.n + 1 };
});
app.post('/upload', async (request) => {
  const file = await request.file();
  const data = await file!.toBuffer();
  return { bytes: data.byteLength };
});
app.get('/ready', async () => ({ status: 'ready' }));
const port = Number(process.argv[2] ?? 8310);
await app.listen({ port, host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
