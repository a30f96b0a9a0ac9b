import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DecodedImage } from '../../src/diffusion/diffusion-pipeline.js';
import { readDiffusionFolder } from '../../src/diffusion/pipeline-folder.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { loadFixturePipeline, oraclePixel, writeDiffusionFolder, type FixtureOptions } from '../helpers/diffusion-fixture.js';

const root = scratchFolder('diffusion');
afterAll(() => rmSync(root, { recursive: true, force: true }));

function pipeline(name: string, options: FixtureOptions, limits = { maxRunning: 8, admissionWaitUs: 1000 }) {
  return loadFixturePipeline(writeDiffusionFolder(join(root, name), options), name, { limits });
}

/** Every pixel of `image` equals `rgb`. */
function expectUniform(image: DecodedImage, rgb: number[]): void {
  const seen = new Set<string>();
  for (let i = 0; i < image.rgb.length; i += 3) seen.add(`${image.rgb[i]},${image.rgb[i + 1]},${image.rgb[i + 2]}`);
  expect([...seen]).toEqual([rgb.join(',')]);
}

describe('a diffusers-style ONNX pipeline folder (tiny oracle stages on ONNX Runtime)', () => {
  it('flow matching: concurrent requests with different step counts, seeds and join times all land on the oracle\'s image', async () => {
    const { p, registry } = await pipeline('flow', { denoiser: 'flow', shift: 3 });
    try {
      const prompts = ['a red fox', 'blue sky', 'a red fox', 'green hills at dawn', 'sky'];
      const steps = [4, 20, 9, 1, 13];
      const first = prompts.slice(0, 3).map((prompt, i) => p.generate({ prompt, width: 32, height: 16, steps: steps[i], guidanceScale: 1, seed: i }));
      await new Promise((resolve) => setTimeout(resolve, 5));
      const later = prompts.slice(3).map((prompt, i) => p.generate({ prompt, width: 32, height: 16, steps: steps[i + 3], guidanceScale: 1, seed: 100 + i }));
      const images = await Promise.all([...first, ...later]);
      for (const [i, image] of images.entries()) {
        expect([image.width, image.height]).toEqual([32, 16]);
        expectUniform(image, await oraclePixel(prompts[i]));
      }
      const metrics = await registry.getSingleMetricAsString('serve_fn_diffusion_step_batch_size');
      // Requests shared calls: fewer calls than their 47 steps together.
      const calls = Number(/serve_fn_diffusion_step_batch_size_count\{model="flow"\} (\d+)/.exec(metrics)![1]);
      expect(calls).toBeLessThan(47);
      expect(await registry.getSingleMetricAsString('serve_fn_diffusion_steps_total')).toContain('serve_fn_diffusion_steps_total{model="flow"} 47');
    } finally {
      await p.stop();
    }
  });

  it('classifier-free guidance doubles the rows and lands on neg + g·(pos − neg); the folder\'s guider sets the default', async () => {
    const { p } = await pipeline('cfg', { denoiser: 'flow', guidance: 2.5, dynamicShift: true });
    try {
      expect(p.folder.defaults.guidanceScale).toBe(2.5);
      const image = await p.generate({ prompt: 'sky', negativePrompt: 'fox', width: 16, height: 16, steps: 6, guidanceScale: 1.5, seed: 3 });
      expectUniform(image, await oraclePixel('sky', 1.5, 'fox'));
    } finally {
      await p.stop();
    }
  });

  it('DDIM with the ε-oracle (a UNet with an int64 timestep) lands on the oracle\'s image', async () => {
    const { p } = await pipeline('ddim', { denoiser: 'ddim' });
    try {
      const images = await Promise.all([3, 10, 25].map((steps, i) => p.generate({ prompt: 'green hills', width: 16, height: 32, steps, guidanceScale: 1, seed: i })));
      for (const image of images) expectUniform(image, await oraclePixel('green hills'));
    } finally {
      await p.stop();
    }
  });

  it('EulerDiscreteScheduler (SD 1.x\'s leading spacing) with its ε-oracle lands on the oracle\'s image, with and without guidance', async () => {
    const { p } = await pipeline('euler', { denoiser: 'euler' });
    try {
      const images = await Promise.all([1, 6, 30].map((steps, i) => p.generate({ prompt: 'green hills', width: 16, height: 32, steps, guidanceScale: 1, seed: i })));
      for (const image of images) expectUniform(image, await oraclePixel('green hills'));
      const guided = await p.generate({ prompt: 'sky', negativePrompt: 'fox', width: 16, height: 16, steps: 8, guidanceScale: 2, seed: 9 });
      expectUniform(guided, await oraclePixel('sky', 2, 'fox'));
    } finally {
      await p.stop();
    }
  });

  it('a random conv denoiser gives the same image batched with company as alone; the same seed gives the same image', async () => {
    const { p } = await pipeline('conv', { denoiser: 'conv' });
    try {
      const alone = await p.generate({ prompt: 'blue sky', width: 32, height: 32, steps: 7, guidanceScale: 1, seed: 42 });
      const together = await Promise.all([
        p.generate({ prompt: 'blue sky', width: 32, height: 32, steps: 7, guidanceScale: 1, seed: 42 }),
        ...[3, 11, 5].map((steps, i) => p.generate({ prompt: 'red fox', width: 32, height: 32, steps, guidanceScale: 1, seed: i })),
      ]);
      expect(Buffer.from(together[0].rgb).equals(Buffer.from(alone.rgb))).toBe(true);
      const other = await p.generate({ prompt: 'blue sky', width: 32, height: 32, steps: 7, guidanceScale: 1, seed: 43 });
      expect(Buffer.from(other.rgb).equals(Buffer.from(alone.rgb))).toBe(false);
    } finally {
      await p.stop();
    }
  });

  it('partial images: decoded previews arrive before the final image', async () => {
    const { p } = await pipeline('partials', { denoiser: 'flow' });
    try {
      const partials: number[] = [];
      await p.generate({ prompt: 'sky', width: 16, height: 16, steps: 8, guidanceScale: 1, seed: 1, partialImages: 3, onPartial: (_image, index) => partials.push(index) });
      expect(partials).toEqual([0, 1, 2]);
    } finally {
      await p.stop();
    }
  });

  it('stop lets images being generated finish (their decode needs the VAE), then refuses new ones', async () => {
    const { p } = await pipeline('stopping', { denoiser: 'flow' });
    const running = p.generate({ prompt: 'sky', width: 16, height: 16, steps: 30, guidanceScale: 1, seed: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await p.stop();
    expectUniform(await running, await oraclePixel('sky'));
    await expect(p.generate({ prompt: 'sky', width: 16, height: 16, steps: 1, guidanceScale: 1 })).rejects.toMatchObject({ code: 'SF_ERR_DRAINING' });
  });

  it('refuses a folder naming what is missing or unsupported', () => {
    const dir = join(root, 'broken');
    mkdirSync(join(dir, 'scheduler'), { recursive: true });
    writeFileSync(join(dir, 'model_index.json'), '{"_class_name":"X"}');
    writeFileSync(join(dir, 'scheduler', 'scheduler_config.json'), '{"_class_name":"LCMScheduler"}');
    expect(() => readDiffusionFolder(dir)).toThrow(/missing tokenizer\/tokenizer.json, text_encoder\/model.onnx, vae_decoder\/model.onnx, transformer\/model.onnx or unet\/model.onnx/);
    const lcm = writeDiffusionFolder(join(root, 'lcm'), { denoiser: 'flow' });
    writeFileSync(join(lcm, 'scheduler', 'scheduler_config.json'), '{"_class_name":"LCMScheduler"}');
    expect(() => readDiffusionFolder(lcm)).toThrow(/scheduler 'LCMScheduler' is not supported/);
    const euler = writeDiffusionFolder(join(root, 'karras'), { denoiser: 'euler' });
    writeFileSync(join(euler, 'scheduler', 'scheduler_config.json'), '{"_class_name":"EulerDiscreteScheduler","use_karras_sigmas":true}');
    expect(() => readDiffusionFolder(euler)).toThrow(/scheduler: EulerDiscreteScheduler with use_karras_sigmas is not supported/);
  });

  it('refuses SD3 / Flux-style folders with more text encoders, naming the encoders\' files found and missing', () => {
    const flux = writeDiffusionFolder(join(root, 'flux-like'), { denoiser: 'flow' });
    mkdirSync(join(flux, 'text_encoder_2'));
    writeFileSync(join(flux, 'text_encoder_2', 'model.onnx'), '');
    mkdirSync(join(flux, 'tokenizer_2'));
    expect(() => readDiffusionFolder(flux)).toThrow('a pipeline with 2 text encoders (SD3 has three, Flux two): found text_encoder_2/model.onnx, missing tokenizer_2/tokenizer.json; serve-fn feeds one text encoder');
    mkdirSync(join(flux, 'tokenizer_3'));
    expect(() => readDiffusionFolder(flux)).toThrow('a pipeline with 3 text encoders (SD3 has three, Flux two): found text_encoder_2/model.onnx, missing tokenizer_2/tokenizer.json, tokenizer_3/tokenizer.json, text_encoder_3/model.onnx;');
  });
});
