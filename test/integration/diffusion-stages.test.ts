import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { DecodedImage } from '../../src/diffusion/diffusion-pipeline.js';
import type { TensorInstanceFactory } from '../../src/model-repository/model-version-builder.js';
import type { Tensor } from '../../src/spec/tensor.js';
import type { TensorWireResult } from '../../src/wire/tensor-model-plan.js';
import { inThreadInstances, scratchFolder } from '../fixtures/repository/repository-files.js';
import { loadFixturePipeline, oraclePixel, writeDiffusionFolder } from '../helpers/diffusion-fixture.js';

const root = scratchFolder('diffusion-stages');
afterAll(() => rmSync(root, { recursive: true, force: true }));

function expectUniform(image: DecodedImage, rgb: number[]): void {
  const seen = new Set<string>();
  for (let i = 0; i < image.rgb.length; i += 3) seen.add(`${image.rgb[i]},${image.rgb[i + 1]},${image.rgb[i + 2]}`);
  expect([...seen]).toEqual([rgb.join(',')]);
}

/** In-thread instances that record which instances each stage starts and what its instances answer. */
function recordingInstances() {
  const started: { model: string; index: number; device: string }[] = [];
  const answers = new Map<string, Tensor[]>();
  const factory: TensorInstanceFactory = (index, plan, context, events) => {
    started.push({ model: context.modelName, index, device: `${context.deviceKind}:${context.deviceId}` });
    const instance = inThreadInstances(index, plan, context, events);
    return {
      ...instance,
      start: () => instance.start(),
      stop: () => instance.stop(),
      async execute(call, onResult) {
        const outcome = await instance.execute(call, onResult);
        const tensors = outcome.results.flatMap((r) => (r.ok ? (r.value as TensorWireResult).outputs : []));
        answers.set(context.modelName, [...(answers.get(context.modelName) ?? []), ...tensors]);
        return outcome;
      },
    };
  };
  return { factory, started, answers };
}

describe('a pipeline\'s stages', () => {
  it('the VAE stage\'s instance answers 8-bit RGB rows, which are the image the HTTP thread gets (no per-pixel work there)', async () => {
    const { factory, answers } = recordingInstances();
    const { p } = await loadFixturePipeline(writeDiffusionFolder(join(root, 'bytes'), { denoiser: 'flow' }), 'bytes', { instanceFactory: factory });
    try {
      const vae = p.stageModels().find((m) => m.info.name === 'bytes_vae_decoder')!;
      expect(vae.info.outputs).toEqual([{ name: 'image', datatype: 'UINT8', shape: [-1, -1, 3] }]);
      expect(vae.info.inputs).toEqual([expect.objectContaining({ name: 'latent_sample', datatype: 'FP32', shape: [4, -1, -1] })]);
      const image = await p.generate({ prompt: 'a red fox', width: 32, height: 16, steps: 3, guidanceScale: 1, seed: 5 });
      expectUniform(image, await oraclePixel('a red fox'));
      const [answer] = answers.get('bytes_vae_decoder')!;
      expect(answer).toMatchObject({ name: 'image', datatype: 'UINT8', shape: [1, 16, 32, 3] });
      expect(Buffer.from(image.rgb).equals(Buffer.from(answer.data as Uint8Array))).toBe(true);
    } finally {
      await p.stop();
    }
  });

  it('partial images are decoded by the VAE stage\'s instance too', async () => {
    const { factory, answers } = recordingInstances();
    const { p } = await loadFixturePipeline(writeDiffusionFolder(join(root, 'partials'), { denoiser: 'flow' }), 'partials', { instanceFactory: factory });
    try {
      const partials: DecodedImage[] = [];
      await p.generate({ prompt: 'sky', width: 16, height: 16, steps: 6, guidanceScale: 1, seed: 1, partialImages: 2, onPartial: (image) => partials.push(image) });
      const decoded = answers.get('partials_vae_decoder')!;
      expect(decoded.map((t) => t.datatype)).toEqual(['UINT8', 'UINT8', 'UINT8']);
      expect(partials.map((image) => Buffer.from(image.rgb).equals(Buffer.from(decoded[0].data as Uint8Array)) || Buffer.from(image.rgb).equals(Buffer.from(decoded[1].data as Uint8Array)))).toEqual([true, true]);
    } finally {
      await p.stop();
    }
  });
});
