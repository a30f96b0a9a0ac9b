import fastify from 'fastify';
import { INPUT_SIZE, MAX_BATCH, OUTPUT_SIZE } from './mlp-model.js';

/**
 * The reference for health-floor.ts: bare fastify with the same traffic shape as the served MLP —
 * JSON bodies of INPUT_SIZE numbers checked by fastify's compiled schema, answered MAX_BATCH at a time
 * every BATCH_MS, as a model on another thread would — but no worker hop, class-validator or queue.
 */
const port = Number(process.argv[2]);
/** About the served MLP's time for one batch (~2.35 ms a sample), so both servers see the same rate. */
const batchMs = Number(process.env.BATCH_MS ?? MAX_BATCH * 2.35);
const app = fastify();
const waiting: ((value: unknown) => void)[] = [];
setInterval(() => {
  for (const answer of waiting.splice(0, MAX_BATCH)) answer({ y: new Array(OUTPUT_SIZE).fill(0.5) });
}, batchMs);
const body = { type: 'object', required: ['x'], properties: { x: { type: 'array', minItems: INPUT_SIZE, maxItems: INPUT_SIZE, items: { type: 'number' } } } };
app.post('/infer', { schema: { body } }, () => new Promise((resolve) => waiting.push(resolve)));
app.get('/health/live', async () => ({ status: 'live' }));
await app.listen({ port, host: '127.0.0.1' });
