import { join } from 'node:path';
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { rmSync } from 'node:fs';
import { oraclePixel, writeDiffusionFolder } from '../helpers/diffusion-fixture.js';

/** The official openai-node SDK against a server started on a tiny oracle DiT folder (worker-thread ONNX stages). */
const root = scratchFolder('images');
let server: ServeFnServer;
let client: OpenAI;
let base: string;

beforeAll(async () => {
  const dir = writeDiffusionFolder(join(root, 'tiny-dit'), { denoiser: 'flow', shift: 3 });
  server = new ServeFnServer({ models: [], diffusionFolders: [dir], logger: false, collectProcessMetrics: false, diffusion: { maxRunning: 8, admissionWaitUs: 2000 } });
  base = await server.listen(0, '127.0.0.1');
  client = new OpenAI({ apiKey: 'test-key', baseURL: `${base}/v1`, maxRetries: 0 });
}, 60_000);

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

/** The distinct RGB values of a PNG. */
async function colours(png: Buffer): Promise<string[]> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const seen = new Set<string>();
  for (let i = 0; i < data.length; i += info.channels) seen.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
  return [...seen];
}

/** vLLM-Omni's extensions, which the SDK sends as given. */
const extensions = (fields: Record<string, unknown>) => fields as Record<string, never>;

describe('openai SDK images.generate against a diffusers-style folder', () => {
  it('concurrent requests at different step counts each get the oracle\'s exact image (default guidance)', async () => {
    const prompts = ['a red fox', 'blue sky', 'green hills at dawn', 'sky'];
    const steps = [3, 17, 8, 1];
    const answers = await Promise.all(prompts.map((prompt, i) => client.images.generate({ model: 'tiny-dit', prompt, size: '32x16' as '256x256', ...extensions({ num_inference_steps: steps[i], seed: i }) })));
    for (const [i, answer] of answers.entries()) {
      expect(answer.data).toHaveLength(1);
      const png = Buffer.from(answer.data![0].b64_json!, 'base64');
      const meta = await sharp(png).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['png', 32, 16]);
      // The folder's default guidance (SD3's 7.0, the transformer pipelines' default) with '' as the negative prompt.
      expect(await colours(png)).toEqual([(await oraclePixel(prompts[i], 7)).join(',')]);
    }
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/serve_fn_diffusion_steps_total\{model="tiny-dit"\} 29/);
    expect(metrics).toMatch(/nv_inference_exec_count\{model="tiny-dit_denoiser",version="1"\} \d+/);
  });

  it('n images, url answers served from this server, jpeg and webp', async () => {
    const answer = await client.images.generate({ model: 'tiny-dit', prompt: 'sky', n: 2, response_format: 'url', output_format: 'webp', ...extensions({ num_inference_steps: 2 }) });
    expect(answer.data).toHaveLength(2);
    const fetched = await fetch(answer.data![0].url!);
    expect(fetched.headers.get('content-type')).toBe('image/webp');
    expect((await sharp(Buffer.from(await fetched.arrayBuffer())).metadata()).format).toBe('webp');
    const jpeg = await client.images.generate({ model: 'tiny-dit', prompt: 'sky', output_format: 'jpeg', output_compression: 20, ...extensions({ num_inference_steps: 1 }) });
    expect((await sharp(Buffer.from(jpeg.data![0].b64_json!, 'base64')).metadata()).format).toBe('jpeg');
  });

  it('streams partial images then the completed image', async () => {
    const stream = await client.images.generate({ model: 'tiny-dit', prompt: 'blue sky', stream: true, partial_images: 2, ...extensions({ num_inference_steps: 6, seed: 5, guidance_scale: 1 }) });
    const events = [];
    for await (const event of stream) events.push(event);
    expect(events.map((e) => e.type)).toEqual(['image_generation.partial_image', 'image_generation.partial_image', 'image_generation.completed']);
    const last = events.at(-1)!;
    expect(await colours(Buffer.from(last.b64_json, 'base64'))).toEqual([(await oraclePixel('blue sky')).join(',')]);
  });

  it('a client that disconnects stops its request at the next step boundary', async () => {
    const controller = new AbortController();
    const pending = fetch(`${base}/v1/images/generations`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: controller.signal,
      body: JSON.stringify({ model: 'tiny-dit', prompt: 'sky', num_inference_steps: 1000, guidance_scale: 1 }),
    }).catch((err: unknown) => err);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    await pending;
    let metrics = '';
    for (let i = 0; i < 200 && !/serve_fn_diffusion_aborted_total\{model="tiny-dit"\} 1/.test(metrics); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      metrics = await (await fetch(`${base}/metrics`)).text();
    }
    expect(metrics).toMatch(/serve_fn_diffusion_aborted_total\{model="tiny-dit"\} 1/);
    expect(metrics).toMatch(/serve_fn_diffusion_requests_running\{model="tiny-dit"\} 0/);
    const steps = Number(/serve_fn_diffusion_steps_total\{model="tiny-dit"\} (\d+)/.exec(metrics)![1]);
    expect(steps).toBeLessThan(29 + 4 + 6 + 1000);
  });

  it('errors in OpenAI\'s shape: unknown model 404 even with one model served, bad size 400', async () => {
    await expect(client.images.generate({ model: 'dall-e-3', prompt: 'x' })).rejects.toBeInstanceOf(NotFoundError);
    const bad = await client.images.generate({ model: 'tiny-dit', prompt: 'x', size: '30x30' as '256x256' }).catch((err: unknown) => err);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect((bad as BadRequestError).param).toBe('size');
  });
});
