import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { oraclePixel, writeDiffusionFolder } from '../helpers/diffusion-fixture.js';

const root = scratchFolder('image-routes');
let server: ServeFnServer;

beforeAll(async () => {
  const dir = writeDiffusionFolder(join(root, 'tiny-dit'), { denoiser: 'flow' });
  writeFileSync(join(dir, 'text_encoder', 'config.pbtxt'), 'instance_group [ { count: 2, kind: KIND_CPU } ]\n');
  server = new ServeFnServer({ models: [], diffusionFolders: [dir], logger: false, collectProcessMetrics: false, diffusion: { maxRunning: 2, admissionWaitUs: 0 } });
  await server.start();
}, 60_000);

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

const post = (url: string, payload: unknown) => server.app.inject({ method: 'POST', url, payload: payload as object });
const generate = (payload: Record<string, unknown>) => post('/v1/images/generations', { model: 'tiny-dit', prompt: 'sky', num_inference_steps: 1, ...payload });

describe('POST /v1/images/generations: OpenAI error answers', () => {
  it.each([
    [{ model: 'gpt-image-1' }, 404, 'model'],
    [{ prompt: undefined }, 400, 'prompt'],
    [{ prompt: '' }, 400, 'prompt'],
    [{ size: '1000x1000' }, 400, 'size'],
    [{ size: '64' }, 400, 'size'],
    [{ size: '0x16' }, 400, 'size'],
    [{ n: 0 }, 400, 'n'],
    [{ n: 11 }, 400, 'n'],
    [{ n: 1.5 }, 400, 'n'],
    [{ num_inference_steps: 0 }, 400, 'num_inference_steps'],
    [{ guidance_scale: 'high' }, 400, 'guidance_scale'],
    [{ response_format: 'file' }, 400, 'response_format'],
    [{ output_format: 'gif' }, 400, 'output_format'],
    [{ output_compression: 101 }, 400, 'output_compression'],
    [{ partial_images: 4 }, 400, 'partial_images'],
    [{ background: 'transparent' }, 400, 'background'],
    [{ quality: 'ultra' }, 400, 'quality'],
    [{ seed: -1 }, 400, 'seed'],
  ])('%j → %i naming %s', async (fields, status, param) => {
    const response = await generate(fields);
    expect(response.statusCode).toBe(status);
    const { error } = response.json<{ error: { type: string; param: string | null; code: string; message: string } }>();
    expect(error).toMatchObject({ type: 'invalid_request_error', param });
  });

  it('size auto is the folder\'s default (sample_size × vae scale factor); quality, style and user are accepted and ignored', async () => {
    const response = await generate({ size: 'auto', quality: 'hd', style: 'vivid', user: 'u1', guidance_scale: 1 });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ size: '32x32', output_format: 'png' });
  });
});

describe('image jobs (modelled on /v1/videos)', () => {
  it('submit → status → content; unknown jobs are 404', async () => {
    const created = (await post('/v1/images/jobs', { model: 'tiny-dit', prompt: 'sky', num_inference_steps: 3, guidance_scale: 1 })).json<{ id: string; status: string }>();
    expect(created.status).toBe('queued');
    let job = created;
    for (let i = 0; i < 200 && job.status !== 'completed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      job = (await server.app.inject({ method: 'GET', url: `/v1/images/jobs/${created.id}` })).json();
    }
    expect(job).toMatchObject({ status: 'completed', progress: 100, object: 'image.job' });
    const content = await server.app.inject({ method: 'GET', url: `/v1/images/jobs/${created.id}/content` });
    expect(content.headers['content-type']).toBe('image/png');
    expect((await server.app.inject({ method: 'GET', url: '/v1/images/jobs/imgjob-nope' })).statusCode).toBe(404);
  });

  it('DELETE cancels a running job at its next step: the aborted counter counts it', async () => {
    const created = (await post('/v1/images/jobs', { model: 'tiny-dit', prompt: 'sky', num_inference_steps: 1000, guidance_scale: 1 })).json<{ id: string }>();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const deleted = await server.app.inject({ method: 'DELETE', url: `/v1/images/jobs/${created.id}` });
    expect(deleted.json()).toMatchObject({ status: 'cancelled', deleted: true });
    let metrics = '';
    for (let i = 0; i < 100 && !/serve_fn_diffusion_aborted_total\{model="tiny-dit"\} 1/.test(metrics); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    }
    expect(metrics).toMatch(/serve_fn_diffusion_aborted_total\{model="tiny-dit"\} 1/);
    expect(metrics).toMatch(/serve_fn_diffusion_requests_running\{model="tiny-dit"\} 0/);
  });

  it('the pipeline is a KServe v2 model: a BYTES prompt and parameters in, the oracle\'s image out as UINT8 [H, W, 3]', async () => {
    const response = await post('/v2/models/tiny-dit/infer', {
      inputs: [{ name: 'prompt', datatype: 'BYTES', shape: [1], data: ['blue sky'] }],
      parameters: { num_inference_steps: 5, guidance_scale: 1, width: 16, height: 32, seed: 9 },
    });
    expect(response.statusCode).toBe(200);
    const [image] = response.json<{ outputs: { name: string; datatype: string; shape: number[]; data: number[] }[] }>().outputs;
    expect(image).toMatchObject({ name: 'image', datatype: 'UINT8', shape: [32, 16, 3] });
    const pixel = await oraclePixel('blue sky');
    expect(new Set(image.data.map((v, i) => (v === pixel[i % 3] ? 'ok' : `${i}:${v}`)))).toEqual(new Set(['ok']));
    const bad = await post('/v2/models/tiny-dit/infer', { inputs: [{ name: 'prompt', datatype: 'BYTES', shape: [1], data: ['x'] }], parameters: { width: 20 } });
    expect(bad.statusCode).toBe(400);
  });

  it('the stages are /v2 models with their own statistics', async () => {
    const index = (await post('/v2/repository/index', {})).json<{ name: string }[]>();
    expect(index.map((m) => m.name)).toEqual(expect.arrayContaining(['tiny-dit_text_encoder', 'tiny-dit_denoiser', 'tiny-dit_vae_decoder']));
    const stats = (await server.app.inject({ method: 'GET', url: '/v2/models/tiny-dit_denoiser/stats' })).json<{ model_stats: { execution_count: number }[] }>();
    expect(stats.model_stats[0].execution_count).toBeGreaterThan(0);
  });

  it('a stage\'s own config.pbtxt instance_group shows in /v2/models/<stage>/config', async () => {
    const config = (stage: string) => server.app.inject({ method: 'GET', url: `/v2/models/tiny-dit_${stage}/config` }).then((r) => r.json<{ instance_group: { count: number; kind: string }[] }>());
    expect((await config('text_encoder')).instance_group).toEqual([expect.objectContaining({ count: 2, kind: 'KIND_CPU' })]);
    expect((await config('denoiser')).instance_group).toEqual([expect.objectContaining({ count: 1 })]);
  });
});
