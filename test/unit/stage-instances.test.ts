import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../src/model-repository/model-config.js';
import { parseStageInstances, withInstanceCount } from '../../src/diffusion/stage-instances.js';

describe('parseStageInstances (--stage-instances)', () => {
  it('reads <stage>=<count> pairs', () => {
    expect(parseStageInstances('denoiser=2,vae_decoder=1')).toEqual({ denoiser: 2, vae_decoder: 1 });
    expect(parseStageInstances(' text_encoder=3 ')).toEqual({ text_encoder: 3 });
  });

  it.each([
    ['unet=2', "unknown pipeline stage 'unet'; the stages are text_encoder, text_encoder_2, denoiser, vae_decoder"],
    ['transformer=1,vae=2', "unknown pipeline stages 'transformer', 'vae'; the stages are text_encoder, text_encoder_2, denoiser, vae_decoder"],
    ['denoiser', "'denoiser' is not <stage>=<count>, e.g. denoiser=2"],
    ['denoiser=two', "'denoiser=two' is not <stage>=<count>, e.g. denoiser=2"],
    ['denoiser=0', 'denoiser: the count must be 1 or more, got 0'],
    ['denoiser=1,denoiser=2', 'denoiser is named twice'],
  ])('refuses %s, saying why', (text, message) => {
    expect(() => parseStageInstances(text)).toThrow(message);
  });
});

describe('withInstanceCount', () => {
  it('sets the count of every group, keeping kinds and devices; undefined leaves the configuration as it is', () => {
    const config = parseModelConfig('instance_group [ { count: 3, kind: KIND_GPU, gpus: [ 0, 1 ] }, { kind: KIND_CPU } ]', 'config.pbtxt', 'm').config;
    expect(withInstanceCount(config, 2).instance_group.map((g) => [g.count, g.kind, g.gpus])).toEqual([[2, 'KIND_GPU', [0, 1]], [2, 'KIND_CPU', []]]);
    expect(withInstanceCount(config, undefined)).toBe(config);
  });
});
