import 'reflect-metadata';
import { Agent, request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { Endpoint, Instances, Model, ServeFnServer } from '../../src/index.js';

@Model({ name: 'echo' })
@Instances(1, { inline: true })
class Echo {
  @Endpoint('/echo', { method: 'GET' })
  async echo(): Promise<string> {
    return 'echo';
  }
}

interface Answer {
  readonly status: number;
  readonly connection: string | undefined;
  readonly body: string;
}

/** One GET over `agent` (keep-alive sockets), or over a connection of its own; a socket error rejects. */
function get(base: string, path: string, agent: Agent | false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const CLIENTS = 16;
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

describe('close() with a shutdown delay, on a listening server', () => {
  const server = new ServeFnServer({ models: [Echo], logger: false, collectProcessMetrics: false });
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  afterAll(async () => {
    agent.destroy();
    await server.close();
  });

  it('keeps answering keep-alive and new connections, with Connection: close, while readiness is 503', async () => {
    const base = await server.listen(0, '127.0.0.1');
    // CLIENTS keep-alive connections, idle once answered, as a load balancer's pool would leave them.
    expect((await Promise.all(range(CLIENTS).map(() => get(base, '/echo', agent)))).map((a) => a.status)).toEqual(range(CLIENTS).map(() => 200));
    expect(Object.values(agent.freeSockets).flat()).toHaveLength(CLIENTS);

    const closed = server.close({ shutdownDelayMs: 2_000 });
    const burst = [...range(CLIENTS).map(() => get(base, '/echo', agent)), ...range(CLIENTS).map(() => get(base, '/echo', false))];
    const ready = await get(base, '/health/ready', false);
    const answers = await Promise.all(burst);

    expect(ready).toMatchObject({ status: 503, connection: 'close' });
    expect(JSON.parse(ready.body)).toEqual({ error: 'Server is not ready: terminating.', code: 'SF_ERR_NOT_READY' });
    expect(answers).toEqual(burst.map(() => ({ status: 200, connection: 'close', body: 'echo' })));
    // Every keep-alive socket was closed after its answer, none under a request.
    expect(Object.values(agent.freeSockets).flat()).toHaveLength(0);
    expect(server.state.phase).toBe('terminating');
    await closed;
    expect(server.state.phase).toBe('stopped');
  });
});

describe('close() while start() is initialising instances', () => {
  const events: string[] = [];

  @Model({ name: 'slow-start' })
  @Instances(2, { inline: true })
  class SlowStart {
    async initialize(): Promise<void> {
      events.push('initializing');
      await new Promise((resolve) => setTimeout(resolve, 300));
      events.push('initialized');
    }

    @Endpoint('/slow-start', { method: 'GET' })
    async get(): Promise<string> {
      return 'up';
    }

    async finalize(): Promise<void> {
      events.push('finalized');
    }
  }

  it('lets the start finish, finalises each instance once, never turns ready, and refuses to listen', async () => {
    const server = new ServeFnServer({ models: [SlowStart], logger: false, collectProcessMetrics: false });
    const started = server.start();
    while (!events.includes('initializing')) await new Promise((resolve) => setTimeout(resolve, 5));
    await server.close({ shutdownDelayMs: 60_000 });
    await started;
    expect(events).toEqual(['initializing', 'initializing', 'initialized', 'initialized', 'finalized', 'finalized']);
    expect(server.state.phase).toBe('stopped');
    await expect(server.listen(0, '127.0.0.1')).rejects.toMatchObject({ code: 'SF_ERR_DRAINING' });
  });
});
