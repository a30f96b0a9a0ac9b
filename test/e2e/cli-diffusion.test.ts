import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { oraclePixel, writeDiffusionFolder } from '../helpers/diffusion-fixture.js';
import { startCli } from './cli-harness.js';

/** `serve-fn start <diffusers folder>`, as a user runs it on an ONNX export: no code. */
const root = scratchFolder('cli-diffusion');
const folder = join(root, 'tiny-dit');

beforeAll(() => {
  writeDiffusionFolder(folder, { denoiser: 'flow' });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('serve-fn start <diffusion pipeline folder>', () => {
  it('serves the folder under its name on the Images API and /v2, with --max-num-seqs, and drains on SIGTERM', async () => {
    const cli = await startCli(['start', folder, '--host', '127.0.0.1', '--max-num-seqs', '2']);
    try {
      await cli.waitForOutput(/serve-fn ready/, 60_000);
      const response = await fetch(`${cli.base}/v1/images/generations`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'tiny-dit', prompt: 'a red fox', num_inference_steps: 3, guidance_scale: 1, size: '16x16' }),
      });
      expect(response.status).toBe(200);
      const { data } = (await response.json()) as { data: { b64_json: string }[] };
      expect(Buffer.from(data[0].b64_json, 'base64').subarray(1, 4).toString()).toBe('PNG');
      const v2 = await fetch(`${cli.base}/v2/models/tiny-dit/infer`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [{ name: 'prompt', datatype: 'BYTES', shape: [1], data: ['a red fox'] }], parameters: { num_inference_steps: 2, guidance_scale: 1, width: 16, height: 16 } }),
      });
      const [image] = ((await v2.json()) as { outputs: { data: number[] }[] }).outputs;
      expect(image.data.slice(0, 3)).toEqual(await oraclePixel('a red fox'));
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 90_000);

  it('--stage-instances sets instances per stage over the stage folders\' config.pbtxt; an unknown stage is refused by name', async () => {
    const cli = await startCli(['start', folder, '--host', '127.0.0.1', '--stage-instances', 'denoiser=2,vae_decoder=1']);
    try {
      await cli.waitForOutput(/serve-fn ready/, 60_000);
      const counts = await Promise.all(['text_encoder', 'denoiser', 'vae_decoder'].map(async (stage) => {
        const config = (await (await fetch(`${cli.base}/v2/models/tiny-dit_${stage}/config`)).json()) as { instance_group: { count: number }[] };
        return config.instance_group.map((g) => g.count);
      }));
      expect(counts).toEqual([[1], [2], [1]]);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
    const refused = await startCli(['start', folder, '--host', '127.0.0.1', '--stage-instances', 'unet=2']);
    expect(await refused.waitForExit(30_000)).not.toBe(0);
    expect(refused.output()).toContain("unknown pipeline stage 'unet'; the stages are text_encoder, text_encoder_2, denoiser, vae_decoder");
  }, 120_000);
});
