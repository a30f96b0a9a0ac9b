import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { writeDecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { startCli } from './cli-harness.js';

/**
 * `serve-fn start` on a generative model folder, as optimum exports it. The OpenAI routes come
 * with the protocol work (src/protocol); here the server boots the decoder on its instance, turns
 * ready only once it is, and shows vLLM's series for the served name.
 */
const root = scratchFolder('cli-generation');
beforeAll(() => writeDecoderFolder(join(root, 'models', 'qwen3-tiny')));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('serve-fn start <generative model folder>', () => {
  it("serves a parent folder's decoder export under --served-model-name with vLLM's flags, ready with its metrics, and drains on SIGTERM", async () => {
    const cli = await startCli(['start', join(root, 'models'), '--host', '127.0.0.1', '--dev', '--served-model-name', 'tiny-chat', '--max-num-seqs', '4', '--max-model-len', '128']);
    try {
      await cli.waitForOutput(/serve-fn ready/, 60_000);
      expect(cli.output()).toContain('generator   tiny-chat (context 128 tokens)');
      expect((await fetch(`${cli.base}/v2/health/ready`)).status).toBe(200);
      const metrics = await fetch(`${cli.base}/metrics`).then((r) => r.text());
      for (const series of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc', 'vllm:num_preemptions_total']) expect(metrics).toContain(`${series}{model_name="tiny-chat"} 0`);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 90_000);

  it('refuses --max-model-len past max_position_embeddings, naming both', async () => {
    const cli = await startCli(['start', join(root, 'models', 'qwen3-tiny'), '--host', '127.0.0.1', '--max-model-len', '999']);
    expect(await cli.waitForExit(60_000)).not.toBe(0);
    expect(cli.output()).toMatch(/--max-model-len 999 is past config\.json's max_position_embeddings 256/);
  }, 60_000);
});
