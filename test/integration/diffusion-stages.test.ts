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

  it('each stage folder\'s config.pbtxt sets its instance_group and parameters; images are unchanged', async () => {
    const dir = writeDiffusionFolder(join(root, 'placed'), { denoiser: 'flow' });
    writeFileSync(join(dir, 'text_encoder', 'config.pbtxt'), 'instance_group [ { count: 2, kind: KIND_CPU } ]\n');
    writeFileSync(join(dir, 'vae_decoder', 'config.pbtxt'), 'instance_group [ { count: 3 } ]\nparameters { key: "intra_op_thread_count" value { string_value: "2" } }\n');
    const { factory, started } = recordingInstances();
    const { p } = await loadFixturePipeline(dir, 'placed', { instanceFactory: factory });
    try {
      const count = (model: string) => started.filter((s) => s.model === model).map((s) => s.index);
      expect([count('placed_text_encoder'), count('placed_denoiser'), count('placed_vae_decoder')]).toEqual([[0, 1], [0], [0, 1, 2]]);
      const config = (stage: string) => p.stageModels().find((m) => m.info.name === `placed_${stage}`)!.info.config as { instance_group: unknown[]; parameters: Record<string, unknown> };
      expect(config('text_encoder').instance_group).toEqual([expect.objectContaining({ name: 'placed_text_encoder_0', count: 2, kind: 'KIND_CPU' })]);
      expect(config('vae_decoder').parameters).toMatchObject({ intra_op_thread_count: { string_value: '2' }, vae_model: { string_value: 'vae_decoder/model.onnx' } });
      const images = await Promise.all(['a red fox', 'sky', 'green hills'].map((prompt, i) => p.generate({ prompt, width: 16, height: 16, steps: 2 + i, guidanceScale: 1, seed: i })));
      for (const [i, prompt] of ['a red fox', 'sky', 'green hills'].entries()) expectUniform(images[i], await oraclePixel(prompt));
    } finally {
      await p.stop();
    }
  });

  it('per-stage instance counts (--stage-instances) win over the stage folders\' config.pbtxt counts, keeping their devices', async () => {
    const dir = writeDiffusionFolder(join(root, 'counted'), { denoiser: 'flow' });
    writeFileSync(join(dir, 'vae_decoder', 'config.pbtxt'), 'instance_group [ { count: 3, kind: KIND_CPU } ]\n');
    const { factory, started } = recordingInstances();
    const { p } = await loadFixturePipeline(dir, 'counted', { instanceFactory: factory, instances: { denoiser: 2, vae_decoder: 1 } });
    try {
      const count = (model: string) => started.filter((s) => s.model === model).map((s) => s.index);
      expect([count('counted_text_encoder'), count('counted_denoiser'), count('counted_vae_decoder')]).toEqual([[0], [0, 1], [0]]);
      const images = await Promise.all(['a red fox', 'sky'].map((prompt, i) => p.generate({ prompt, width: 16, height: 16, steps: 2 + i, guidanceScale: 1, seed: i })));
      for (const [i, prompt] of ['a red fox', 'sky'].entries()) expectUniform(images[i], await oraclePixel(prompt));
    } finally {
      await p.stop();
    }
  });

  it('a KIND_GPU group places the stage\'s instances on the GPU it names', async () => {
    // The VAE stage's instance is handed gpu:1 (this test's factory then refuses to start it: no GPU here).
    const dir = writeDiffusionFolder(join(root, 'gpu'), { denoiser: 'flow' });
    writeFileSync(join(dir, 'vae_decoder', 'config.pbtxt'), 'instance_group [ { count: 1, kind: KIND_GPU, gpus: [ 1 ] } ]\n');
    const { factory, started } = recordingInstances();
    const gpuRefused: TensorInstanceFactory = (index, plan, context, events) =>
      context.deviceKind === 'gpu' ? { ...factory(index, plan, context, events), start: () => Promise.reject(new Error('no GPU in this test')) } : factory(index, plan, context, events);
    await expect(loadFixturePipeline(dir, 'gpu', { instanceFactory: gpuRefused })).rejects.toThrow(/no GPU in this test/);
    expect(started.map((s) => `${s.model} ${s.device}`).sort()).toEqual(['gpu_denoiser cpu:0', 'gpu_text_encoder cpu:0', 'gpu_vae_decoder gpu:1']);
    // An ONNX stage's file is read on its device when the pipeline is built, as a repository model's is.
    const onnx = writeDiffusionFolder(join(root, 'gpu-transformer'), { denoiser: 'flow' });
    writeFileSync(join(onnx, 'transformer', 'config.pbtxt'), 'instance_group [ { kind: KIND_GPU } ]\n');
    const failed = await loadFixturePipeline(onnx, 'gpu-transformer').catch((err: unknown) => err as Error);
    if (failed instanceof Error) expect(failed.message).toMatch(/transformer: .*cuda/);
    else await failed.p.stop();
  });

  it('a stage\'s config.pbtxt setting anything else is refused, naming the stage and the field', async () => {
    const dir = writeDiffusionFolder(join(root, 'other-fields'), { denoiser: 'flow' });
    writeFileSync(join(dir, 'transformer', 'config.pbtxt'), 'max_batch_size: 4\ninstance_group [ { count: 1 } ]\n');
    await expect(loadFixturePipeline(dir, 'other-fields')).rejects.toMatchObject({
      code: 'SF_ERR_DIFFUSION_FOLDER_INVALID', message: expect.stringMatching(/transformer: .*sets only instance_group and parameters, not max_batch_size/),
    });
  });
});
