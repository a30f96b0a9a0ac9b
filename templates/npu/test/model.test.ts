import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { ServeFnServer, buildDefinitions } from 'serve-fn';
import { {{className}} } from '../src/{{modelName}}.model.js';
import { postprocess, preprocess } from '../src/{{modelName}}-processing.js';

test('the model class is defined for one instance on NPU 0, batching /classify', () => {
  const [def] = buildDefinitions([{{className}}]);
  assert.equal(def!.name, '{{modelName}}');
  assert.deepEqual(def!.instances, { count: 1, kind: 'npu', devices: [0], inline: false });
  assert.deepEqual(def!.endpoints.map((e) => [e.httpMethod, e.path, e.batch?.maxBatchSize]), [['POST', '/classify', 8]]);
  assert.deepEqual(def!.hooks, { initialize: true, finalize: false });
});

test('preprocess packs standardised rows into one FP32 buffer', () => {
  assert.deepEqual([...preprocess([[1, 2, 3, 4], [-1, 0, 0.5, 8]])], [1, 2, 3, 4, -1, 0, 0.5, 8]);
});

test('postprocess takes the softmax of each row of logits', () => {
  const results = postprocess(Float32Array.from([0, Math.log(3), 2, 2]), 2);
  assert.deepEqual(results.map((r) => r.label), ['positive', 'negative']);
  assert.ok(Math.abs(results[0]!.probability - 0.75) < 1e-6);
  assert.equal(results[1]!.probability, 0.5);
});

interface DoctorReport {
  readonly npu: { readonly available: boolean; readonly reason?: string };
}

/** Asks `serve-fn doctor` whether this machine has an Ascend NPU; a reason to skip when it has none. */
function deviceSkipReason(): string | false {
  const bin = fileURLToPath(new URL('../node_modules/.bin/serve-fn', import.meta.url));
  const report = JSON.parse(execFileSync(process.execPath, [bin, 'doctor', '--json'], { encoding: 'utf8' })) as DoctorReport;
  if (!report.npu.available) return `serve-fn doctor reports no Ascend NPU (${report.npu.reason}); the device run is skipped`;
  if (!existsSync(fileURLToPath(new URL('../models/model.om', import.meta.url)))) return 'models/model.om is missing: compile your model with ATC (see README.md)';
  return false;
}

describe('on the NPU', { skip: deviceSkipReason() }, () => {
  test('classify runs models/model.om', async () => {
    const server = new ServeFnServer({ models: [{{className}}], moduleUrl: new URL('../index.ts', import.meta.url).href, logger: false, collectProcessMetrics: false });
    await server.start();
    try {
      const res = await server.app.inject({ method: 'POST', url: '/classify', payload: { features: [1, 2, 3, 4] } });
      assert.equal(res.statusCode, 200);
      const body = res.json() as { label: string; probability: number };
      assert.ok(['negative', 'positive'].includes(body.label));
      assert.ok(body.probability >= 0.5 && body.probability <= 1);
    } finally {
      await server.close();
    }
  });
});
