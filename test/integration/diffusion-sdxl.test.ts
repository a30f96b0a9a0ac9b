import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DecodedImage } from '../../src/diffusion/diffusion-pipeline.js';
import { readDiffusionFolder } from '../../src/diffusion/pipeline-folder.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { loadFixturePipeline, writeDiffusionFolder } from '../helpers/diffusion-fixture.js';
import { sdxlReference, writeSdxlFolder, type SdxlCase } from '../helpers/sdxl-fixture.js';
import { missingPython } from '../helpers/speech-python.js';

const root = scratchFolder('sdxl');
afterAll(() => rmSync(root, { recursive: true, force: true }));
const noPython = missingPython(['onnx', 'numpy']);

/** The distinct RGB values of an image. */
function colours(image: DecodedImage): string[] {
  const seen = new Set<string>();
  for (let i = 0; i < image.rgb.length; i += 3) seen.add(`${image.rgb[i]},${image.rgb[i + 1]},${image.rgb[i + 2]}`);
  return [...seen];
}

const generate = (p: Awaited<ReturnType<typeof loadFixturePipeline>>['p'], c: SdxlCase, steps: number, seed: number) =>
  p.generate({ prompt: c.prompt, negativePrompt: c.negativePrompt, width: c.width, height: c.height, steps, guidanceScale: c.guidance, seed });

describe('an SDXL-style pipeline folder (two text encoders, a UNet with text_embeds and time_ids)', () => {
  it('is read as SDXL: the second tokenizer and encoder, force_zeros_for_empty_prompt, SDXL\'s defaults and a fourth stage', async () => {
    const folder = readDiffusionFolder(writeSdxlFolder(join(root, 'read')));
    expect(folder.secondEncoder?.textEncoderFile).toBe(join(root, 'read', 'text_encoder_2', 'model.onnx'));
    expect(folder.forceZerosForEmptyPrompt).toBe(true);
    expect([folder.defaults.steps, folder.defaults.guidanceScale]).toEqual([50, 5]);
    expect(readDiffusionFolder(writeSdxlFolder(join(root, 'no-zeros'), { forceZeros: false })).forceZerosForEmptyPrompt).toBe(false);
    const { p } = await loadFixturePipeline(join(root, 'read'), 'xl');
    try {
      expect(p.stageModels().map((m) => m.info.name)).toEqual(['xl_text_encoder', 'xl_text_encoder_2', 'xl_denoiser', 'xl_vae_decoder']);
    } finally {
      await p.stop();
    }
  });

  it.skipIf(noPython)('served images equal numpy\'s reference of diffusers\' SDXL math (concurrent, batched at the step level), and the fixture tells wrong variants apart', async () => {
    const dir = writeSdxlFolder(join(root, 'xl'));
    const cases: SdxlCase[] = [
      { prompt: 'a red fox', width: 32, height: 16, guidance: 1 },
      { prompt: 'blue sky', width: 16, height: 32, guidance: 1 },
      { prompt: 'green hills at dawn', negativePrompt: 'fox', width: 32, height: 16, guidance: 3 },
      { prompt: 'sky', width: 32, height: 16, guidance: 2.5 },
      { prompt: 'a red fox', negativePrompt: '', width: 32, height: 16, guidance: 2.5 },
      { prompt: 'blue sky', negativePrompt: 'green hills', width: 32, height: 16, guidance: 4 },
    ];
    const reference = await sdxlReference(dir, cases);
    const { p, registry } = await loadFixturePipeline(dir, 'xl');
    try {
      const steps = [4, 9, 6, 12, 3, 7];
      const images = await Promise.all(cases.map((c, i) => generate(p, c, steps[i], i)));
      for (const [i, image] of images.entries()) {
        expect([image.width, image.height]).toEqual([cases[i].width, cases[i].height]);
        expect({ case: i, colours: colours(image) }).toEqual({ case: i, colours: [reference[i].pixel.join(',')] });
      }
      // The guided requests of one size shared denoiser calls: fewer calls than their steps.
      const metrics = await registry.getSingleMetricAsString('serve_fn_diffusion_step_batch_size');
      const calls = Number(/serve_fn_diffusion_step_batch_size_count\{model="xl"\} (\d+)/.exec(metrics)![1]);
      expect(calls).toBeLessThan(steps.reduce((a, b) => a + b, 0));
    } finally {
      await p.stop();
    }
    // Each wrong reading of the math gives another image for some case: the comparison above can fail.
    const names = new Set(reference.flatMap((r) => Object.keys(r.variants)));
    expect(names.size).toBe(6);
    for (const name of names) {
      const differs = reference.some((r) => r.variants[name] && r.variants[name].some((v, c) => Math.abs(v - r.pixel[c]) >= 2));
      expect({ name, differs }).toEqual({ name, differs: true });
    }
  });

  it.skipIf(noPython)('force_zeros_for_empty_prompt: false encodes \'\' as the unconditional branch, as diffusers does', async () => {
    const dir = writeSdxlFolder(join(root, 'empty'), { forceZeros: false });
    const cases: SdxlCase[] = [{ prompt: 'green hills at dawn', width: 16, height: 32, guidance: 3 }];
    const [reference] = await sdxlReference(dir, cases);
    const { p } = await loadFixturePipeline(dir, 'empty');
    try {
      expect(colours(await generate(p, cases[0], 5, 1))).toEqual([reference.pixel.join(',')]);
    } finally {
      await p.stop();
    }
  });

  it('a request batched with company gives the image it gives alone', async () => {
    const { p } = await loadFixturePipeline(writeSdxlFolder(join(root, 'company')), 'company');
    try {
      const lone = { prompt: 'blue sky', negativePrompt: 'fox', width: 32, height: 32, guidance: 3 };
      const alone = await generate(p, lone, 6, 42);
      const together = await Promise.all([
        generate(p, lone, 6, 42),
        ...['red fox', 'sky', 'green hills'].map((prompt, i) => generate(p, { prompt, width: 32, height: 32, guidance: 2 + i }, 3 + 2 * i, i)),
      ]);
      expect(Buffer.from(together[0].rgb).equals(Buffer.from(alone.rgb))).toBe(true);
      expect(colours(together[1])).not.toEqual(colours(alone));
    } finally {
      await p.stop();
    }
  });

  it('refuses a partial pair, and a UNet without the added conditions, naming what is missing', async () => {
    const partial = writeDiffusionFolder(join(root, 'partial'), { denoiser: 'euler' });
    mkdirSync(join(partial, 'tokenizer_2'));
    writeFileSync(join(partial, 'tokenizer_2', 'tokenizer.json'), '{}');
    expect(() => readDiffusionFolder(partial)).toThrow('an SDXL-style pipeline (two text encoders and a UNet): found tokenizer_2/tokenizer.json, missing text_encoder_2/model.onnx');
    const lengths = writeSdxlFolder(join(root, 'lengths'));
    writeFileSync(join(lengths, 'tokenizer_2', 'tokenizer_config.json'), '{"model_max_length": 77}');
    expect(() => readDiffusionFolder(lengths)).toThrow("tokenizer_2's model_max_length (77) differs from tokenizer's (8)");
    const plainUnet = writeSdxlFolder(join(root, 'plain-unet'));
    writeFileSync(join(plainUnet, 'unet', 'model.onnx'), readUnet(join(root, 'plain-source')));
    await expect(loadFixturePipeline(plainUnet, 'plain')).rejects.toThrow("an SDXL-style pipeline's unet/model.onnx needs an input named text_embeds");
    const noStates = writeSdxlFolder(join(root, 'no-states'));
    writeFileSync(join(noStates, 'text_encoder', 'model.onnx'), readTextEncoder(join(root, 'states-source')));
    await expect(loadFixturePipeline(noStates, 'no-states')).rejects.toThrow('text_encoder/model.onnx exports no hidden_states.N outputs');
    const lone = writeDiffusionFolder(join(root, 'lone'), { denoiser: 'euler' });
    writeFileSync(join(lone, 'unet', 'model.onnx'), readUnet(join(root, 'xl-source'), true));
    await expect(loadFixturePipeline(lone, 'lone')).rejects.toThrow("the denoiser also needs text_embeds, time_ids, which this server does not feed (pooled projections, guidance embeddings; SDXL's text_embeds and time_ids only beside tokenizer_2/ and text_encoder_2/)");
  });
});

/** The unet/model.onnx of a one-encoder Euler folder, or (sdxl) of an SDXL one. */
function readUnet(dir: string, sdxl = false): Buffer {
  const source = sdxl ? writeSdxlFolder(dir) : writeDiffusionFolder(dir, { denoiser: 'euler' });
  return readFileSync(join(source, 'unet', 'model.onnx'));
}

/** A one-encoder folder's text encoder (last_hidden_state only). */
function readTextEncoder(dir: string): Buffer {
  return readFileSync(join(writeDiffusionFolder(dir, { denoiser: 'euler' }), 'text_encoder', 'model.onnx'));
}
