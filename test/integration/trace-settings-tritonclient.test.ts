import { execFile, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { startTracing } from '../../src/tracing/request-tracing.js';
import { scratchFolder, SIMPLE_CONFIG, writeFiles } from '../fixtures/repository/repository-files.js';

/**
 * Triton's own Python client (tritonclient.http) against the trace extension. Needs a checkout of
 * github.com/triton-inference-server/client: TRITON_CLIENT_LIBRARY=<checkout>/src/python/library,
 * and a python3 ($PYTHON, Debian's /usr/bin/python3 by default) with gevent, geventhttpclient,
 * python-rapidjson and numpy (bench/triton-client/run.sh lists the Debian packages). Skips without.
 */
const library = process.env.TRITON_CLIENT_LIBRARY;
const python = process.env.PYTHON ?? '/usr/bin/python3';
const usable = library !== undefined && existsSync(join(library, 'tritonclient', 'http')) && spawnSync(python, ['-c', 'import gevent, geventhttpclient, rapidjson, numpy']).status === 0;

const CLIENT = `
import json, sys
sys.path.insert(0, sys.argv[1])
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException
c = httpclient.InferenceServerClient(sys.argv[2])
out = {'extensions': c.get_server_metadata()['extensions'], 'global': c.get_trace_settings()}
out['updated'] = c.update_trace_settings(model_name='simple', settings={'trace_rate': '10', 'trace_level': ['OFF']})
out['model'] = c.get_trace_settings(model_name='simple')
out['cleared'] = c.update_trace_settings(model_name='simple', settings={'trace_level': None})
try:
    c.update_trace_settings(settings={'trace_level': ['TENSORS']})
except InferenceServerException as e:
    out['refused'] = [e.status(), e.message()]
print(json.dumps(out))
`;

describe.skipIf(!usable)("Triton's Python client on the trace extension", () => {
  const root = scratchFolder('trace-tritonclient');
  writeFiles(root, { 'simple/config.pbtxt': SIMPLE_CONFIG, 'simple/1/model.onnx': buildAddSubModel({ size: 16 }) });
  let server: ServeFnServer | undefined;
  const closers: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    await server?.close();
    for (const close of closers) await close();
    rmSync(root, { recursive: true, force: true });
  });

  it('get_trace_settings and update_trace_settings, globally and for one model', async () => {
    // A receiver that takes the spans and drops them: the settings are what is tested here.
    const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(200).end('{}')));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => receiver.close(resolve)));
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}` }, '0.1.0');
    server = new ServeFnServer({ models: [], logger: false, collectProcessMetrics: false, tracing, repository: { root, controlMode: 'explicit', startupModels: ['simple'] } });
    const address = new URL(await server.listen(0, '127.0.0.1'));
    const run = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      // Asynchronously: the server answers on this thread while the client runs.
      execFile(python, ['-c', CLIENT, library!, address.host], (err, stdout, stderr) => resolve({ status: err ? 1 : 0, stdout, stderr }));
    });
    expect(run.stderr).toBe('');
    const out = JSON.parse(run.stdout) as Record<string, unknown>;
    const defaults = { trace_level: ['TIMESTAMPS'], trace_rate: '1', trace_count: '-1', log_frequency: '0', trace_file: '', trace_mode: 'opentelemetry' };
    expect(out.extensions).toContain('trace');
    expect(out.global).toEqual(defaults);
    expect(out.updated).toEqual({ ...defaults, trace_level: ['OFF'], trace_rate: '10' });
    expect(out.model).toEqual({ ...defaults, trace_level: ['OFF'], trace_rate: '10' });
    expect(out.cleared).toEqual({ ...defaults, trace_rate: '10' });
    expect(out.refused).toEqual(['400', expect.stringContaining("'TENSORS' is not supported")]);
  });
});
