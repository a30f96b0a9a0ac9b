import 'reflect-metadata';
import { afterEach, describe, expect, it } from 'vitest';
import { Endpoint, Instances, Model, ServeFnServer } from '../../src/index.js';

/** A promise the test settles by hand. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

let initGate = gate();
let runGate = gate();
let running = false;

@Model({ name: 'slow' })
@Instances(2, { inline: true })
class Slow {
  async initialize(): Promise<void> {
    await initGate.promise;
  }

  @Endpoint('/run')
  async run(): Promise<string> {
    running = true;
    await runGate.promise;
    return 'done';
  }
}

const servers: ServeFnServer[] = [];

function newServer(): ServeFnServer {
  initGate = gate();
  runGate = gate();
  running = false;
  const server = new ServeFnServer({ models: [Slow], logger: false, collectProcessMetrics: false });
  servers.push(server);
  return server;
}

afterEach(async () => {
  initGate.open();
  runGate.open();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function get(server: ServeFnServer, url: string): Promise<{ status: number; body: unknown }> {
  const res = await server.app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: res.json() };
}

const notReady = (phase: string): unknown => ({ error: `Server is not ready: ${phase}.`, code: 'SF_ERR_NOT_READY' });

describe('/health/live', () => {
  it('answers 200 in every phase the routes exist', async () => {
    const server = newServer();
    await server.prepare();
    expect(await get(server, '/health/live')).toEqual({ status: 200, body: { status: 'live' } });
    const starting = server.start();
    expect(await get(server, '/health/live')).toEqual({ status: 200, body: { status: 'live' } });
    initGate.open();
    await starting;
    expect(await get(server, '/health/live')).toEqual({ status: 200, body: { status: 'live' } });
  });
});

describe('/health/ready', () => {
  it('answers 503 until every instance has finished initialize, then 200', async () => {
    const server = newServer();
    await server.prepare();
    expect(await get(server, '/health/ready')).toEqual({ status: 503, body: notReady('starting') });

    let started = false;
    const starting = server.start().then(() => (started = true));
    expect(await get(server, '/health/ready')).toEqual({ status: 503, body: notReady('starting') });
    expect(started).toBe(false);

    initGate.open();
    await starting;
    expect(await get(server, '/health/ready')).toEqual({ status: 200, body: { status: 'ready' } });
  });

  it('answers 503 during the shutdown delay while requests are still served, then drains', async () => {
    const server = newServer();
    initGate.open();
    runGate.open();
    await server.start();
    const closing = server.close({ shutdownDelayMs: 1_000 });
    expect(await get(server, '/health/ready')).toEqual({ status: 503, body: notReady('terminating') });
    const served = await server.app.inject({ method: 'POST', url: '/run' });
    expect([served.statusCode, served.body, served.headers.connection]).toEqual([200, 'done', 'close']);
    expect(server.state.phase).toBe('terminating');
    await closing;
    expect(server.state.phase).toBe('stopped');
  });

  it('answers 503 while draining, as soon as close() is called and before in-flight requests finish', async () => {
    const server = newServer();
    initGate.open();
    await server.start();
    const inFlight = server.app.inject({ method: 'POST', url: '/run' });
    await expect.poll(() => running).toBe(true);

    const closing = server.close();
    expect(await get(server, '/health/ready')).toEqual({ status: 503, body: notReady('draining') });
    expect(server.state.phase).toBe('draining');

    runGate.open();
    expect((await inFlight).body).toBe('done');
    await closing;
    expect(server.state.phase).toBe('stopped');
  });
});
