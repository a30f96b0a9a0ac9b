import fastify from 'fastify';

/**
 * The floor target (d) is read against: bare fastify answering /health/live and nothing else, in a
 * process of its own. Probed alongside the saturated served model, it shows what any process on this
 * machine waits for the CPU while the cores are busy, which no server can answer faster than.
 */
const app = fastify();
app.get('/health/live', async () => ({ status: 'live' }));
await app.listen({ port: Number(process.argv[2]), host: '127.0.0.1' });
