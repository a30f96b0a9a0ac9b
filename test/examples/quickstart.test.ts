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
