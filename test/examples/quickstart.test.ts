import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/index.js';
import { CosyVoice } from '../../examples/quickstart/index.js';
import { metricsCounts, statisticsCounts } from '../helpers/statistics-and-metrics.js';

function form(fields: Record<string, string>): { payload: Buffer; headers: Record<string, string> } {
  const boundary = '----serve-fn-quickstart-test';
  const parts = Object.entries(fields).map(([k, v]) => `--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
  return { payload: Buffer.from(`${parts.join('')}--${boundary}--\r\n`), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

describe('quickstart example (CosyVoice-shaped) on the KServe v2 protocol', () => {
  let server: ServeFnServer;

  beforeAll(async () => {
    server = new ServeFnServer({
      models: [CosyVoice],
      moduleUrl: new URL('../../examples/quickstart/index.ts', import.meta.url).href,
      collectProcessMetrics: false,
    });
    await server.start();
  });

  afterAll(async () => {
    await server?.close();
  });

  it('counts in /v2 statistics what /metrics counts after its endpoints served requests', async () => {
    const answers = await Promise.all([
      ...['one', 'two words', 'three more words', 'four', 'five'].map((text) => server.app.inject({ method: 'POST', url: '/prosody', payload: { text } })),
      ...['alto', 'tenor'].map((spk_id) => server.app.inject({ method: 'POST', url: '/inference_sft', ...form({ tts_text: 'hi', spk_id }) })),
      // Refused by validation before it reaches the model's queue: neither view counts it.
      server.app.inject({ method: 'POST', url: '/prosody', payload: { text: '' } }),
    ]);
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200, 200, 200, 422]);

    const stats = await statisticsCounts(server.app);
    expect(stats).toEqual({ 'cosyvoice:1': { success: 7, failure: 0 } });
    expect(stats).toEqual(await metricsCounts(server.app));
  });

  it('answers KServe v2 infer on its tensor interface with what /prosody answers, and 400 for a row /prosody would refuse', async () => {
    const texts = ['hello there world', 'a banana'];
    const routes = await Promise.all(texts.map((text) => server.app.inject({ method: 'POST', url: '/prosody', payload: { text, speed: 2 } })));
    const infer = await server.app.inject({
      method: 'POST',
      url: '/v2/models/cosyvoice/infer',
      payload: {
        inputs: [
          { name: 'TEXT', datatype: 'BYTES', shape: [2, 1], data: texts },
          { name: 'SPEED', datatype: 'FP32', shape: [2, 1], data: [2, 2] },
        ],
      },
    });
    expect(infer.statusCode).toBe(200);
    const columns = Object.fromEntries(infer.json().outputs.map((o: { name: string; data: number[] }) => [o.name, o.data]));
    expect(routes.map((r) => r.json()).map(({ duration_ms, syllables, words }) => ({ duration_ms, syllables, words }))).toEqual(
      texts.map((_, i) => ({ duration_ms: columns.DURATION_MS[i], syllables: columns.SYLLABLES[i], words: columns.WORDS[i] })),
    );

    const empty = await server.app.inject({ method: 'POST', url: '/v2/models/cosyvoice/infer', payload: { inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [1, 1], data: [''] }] } });
    expect([empty.statusCode, empty.json()]).toEqual([400, { error: 'row 0: TEXT must hold 1 to 2000 characters and SPEED lie in [0.25, 4]', code: 'SF_ERR_BAD_REQUEST' }]);
  });

  it('answers its Triton-shaped configuration from @Instances(2) and @Batch(16, 1000)', async () => {
    const config = (await server.app.inject({ method: 'GET', url: '/v2/models/cosyvoice/config' })).json();
    expect(config).toMatchObject({
      name: 'cosyvoice',
      backend: 'serve-fn',
      max_batch_size: 16,
      instance_group: [{ count: 2, kind: 'KIND_CPU' }],
      dynamic_batching: { max_queue_delay_microseconds: 1000 },
      parameters: { endpoints: { string_value: 'POST /inference_sft, POST /prosody' } },
    });
  });
});
