import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { parseApiRestriction } from '../../src/server/restricted-apis.js';
import type { SecurityOptions } from '../../src/server/security-plugin.js';
import { TraceSettings } from '../../src/tracing/trace-settings.js';
import { answer, securedKserveApps } from '../helpers/secured-kserve-app.js';

const securedApp = securedKserveApps();
const serve = (traceSettings: TraceSettings, security: SecurityOptions = {}): Promise<FastifyInstance> => securedApp(security, { traceSettings });

const DEFAULTS = { trace_level: ['TIMESTAMPS'], trace_rate: '1', trace_count: '-1', log_frequency: '0', trace_file: '', trace_mode: 'opentelemetry' };

describe("Triton's trace extension over HTTP", () => {
  it('answers the global settings at /v2/trace/setting and a model’s, which follow the global ones until set', async () => {
    const app = await serve(new TraceSettings(true));
    expect(await answer(app, { method: 'GET', url: '/v2/trace/setting' })).toEqual({ status: 200, body: DEFAULTS });
    expect(await answer(app, { method: 'POST', url: '/v2/trace/setting', payload: { trace_rate: '5' } })).toEqual({ status: 200, body: { ...DEFAULTS, trace_rate: '5' } });
    expect(await answer(app, { method: 'GET', url: '/v2/models/simple/trace/setting' })).toEqual({ status: 200, body: { ...DEFAULTS, trace_rate: '5' } });
    const model = await answer(app, { method: 'POST', url: '/v2/models/simple/trace/setting', payload: { trace_level: ['OFF'], trace_count: '3' } });
    expect(model).toEqual({ status: 200, body: { ...DEFAULTS, trace_level: ['OFF'], trace_rate: '5', trace_count: '3' } });
    // A model's own settings leave the global ones as they were.
    expect((await answer(app, { method: 'GET', url: '/v2/trace/setting' })).body).toEqual({ ...DEFAULTS, trace_rate: '5' });
    // null puts one setting back to the global value; an empty request drops the model's own settings.
    expect((await answer(app, { method: 'POST', url: '/v2/models/simple/trace/setting', payload: { trace_level: null } })).body).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_count: '3' });
    expect((await answer(app, { method: 'POST', url: '/v2/models/simple/trace/setting', payload: {} })).body).toEqual({ ...DEFAULTS, trace_rate: '5' });
  });

  it("refuses what it cannot honour with a 400 in the protocol's error shape, and changes nothing", async () => {
    const app = await serve(new TraceSettings(true));
    const refused = async (payload: object, message: string): Promise<void> => {
      const res = await answer(app, { method: 'POST', url: '/v2/trace/setting', payload });
      expect(res.status, JSON.stringify(payload)).toBe(400);
      expect((res.body as { error: string }).error, JSON.stringify(payload)).toContain(message);
    };
    await refused({ trace_level: ['TENSORS'] }, "trace setting 'trace_level' 'TENSORS' is not supported");
    await refused({ trace_level: ['LOUD'] }, "'LOUD' is not a level");
    await refused({ trace_rate: '0' }, "trace setting 'trace_rate' must be an integer of at least 1");
    await refused({ trace_count: 'many' }, "trace setting 'trace_count' must be an integer of at least -1");
    await refused({ trace_file: '/tmp/trace.json' }, "belongs to Triton's 'triton' trace mode");
    await refused({ log_frequency: '10' }, "belongs to Triton's 'triton' trace mode");
    await refused({ trace_mode: 'triton' }, "is 'opentelemetry' and cannot be changed");
    await refused({ trace_rate: '2', sampling: 'yes' }, "trace setting 'sampling' is unknown");
    expect((await answer(app, { method: 'GET', url: '/v2/trace/setting' })).body).toEqual(DEFAULTS);
    expect((await answer(app, { method: 'GET', url: '/v2/models/nope/trace/setting' })).status).toBe(404);
  });

  it('reports OFF while tracing is off (no OTLP endpoint) and refuses to turn it on', async () => {
    const app = await serve(new TraceSettings(false));
    expect((await answer(app, { method: 'GET', url: '/v2/trace/setting' })).body).toMatchObject({ trace_level: ['OFF'] });
    const res = await answer(app, { method: 'POST', url: '/v2/trace/setting', payload: { trace_level: ['TIMESTAMPS'] } });
    expect(res.status).toBe(400);
    expect((res.body as { error: string }).error).toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
    expect((await answer(app, { method: 'GET', url: '/v2' })).body).toMatchObject({ extensions: expect.arrayContaining(['trace']) });
  });

  it("is Triton's restricted 'trace' group: --http-restricted-api trace:... asks for its header", async () => {
    const app = await serve(new TraceSettings(true), { restrictedApis: { http: [parseApiRestriction('trace:admin-key=s3cret-0123456789')] } });
    for (const url of ['/v2/trace/setting', '/v2/models/simple/trace/setting']) {
      expect(await answer(app, { method: 'GET', url, remoteAddress: '127.0.0.1' }), url).toEqual({ status: 403, body: { error: "This API is restricted, expecting header 'admin-key'", code: 'SF_ERR_API_RESTRICTED' } });
      expect((await app.inject({ method: 'POST', url, remoteAddress: '192.0.2.2', headers: { 'admin-key': 's3cret-0123456789' }, payload: { trace_rate: '2' } })).statusCode, url).toBe(200);
    }
  });
});
