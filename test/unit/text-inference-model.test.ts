import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import type { EmbedOptions, TextEngine } from '../../src/text/text-engine.js';
import { TextInferenceModel } from '../../src/text/text-inference-model.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';

/** An embedder that keeps the options each call gets and answers one 2-wide row per text. */
function recordingEmbedder(): { model: TextInferenceModel; calls: EmbedOptions[] } {
  const calls: EmbedOptions[] = [];
  const engine = {
    info: { name: 'embedder', task: 'embed', labels: [] },
    ready: () => true,
    embed: async (texts: readonly unknown[], options: EmbedOptions) => {
      calls.push(options);
      return { values: texts.map(() => Float32Array.of(1, 0)), promptTokens: 0, characters: 0, timings: { tokenizationMs: 0, queueMs: 0, inferenceMs: 0, totalMs: 0 } };
    },
  } as unknown as TextEngine;
  return { model: new TextInferenceModel(engine, '1'), calls };
}

const texts = [createTensor('text', 'BYTES', [1], [new TextEncoder().encode('hello')])];

describe('TextInferenceModel request parameters', () => {
  it('passes truncate, truncation_direction (any case), normalize, dimensions and prompt_name to the engine', async () => {
    const { model, calls } = recordingEmbedder();
    await model.infer({ inputs: texts, parameters: { truncate: true, truncation_direction: 'LEFT', normalize: false, dimensions: 2, prompt_name: 'query' } });
    await model.infer({ inputs: texts });
    expect(calls).toEqual([
      { truncate: true, truncationDirection: 'left', normalize: false, dimensions: 2, promptName: 'query' },
      { truncate: undefined, truncationDirection: undefined, normalize: undefined, dimensions: undefined, promptName: undefined },
    ]);
  });

  it.each([
    [{ truncate: 'yes' }, "parameter 'truncate' must be a boolean"],
    [{ dimensions: 1.5 }, "parameter 'dimensions' must be an integer"],
    [{ prompt_name: 3 }, "parameter 'prompt_name' must be a string"],
    [{ truncation_direction: 'up' }, "parameter 'truncation_direction' must be 'left' or 'right'"],
  ])('refuses %j with SF_ERR_BAD_REQUEST naming the parameter', async (parameters, message) => {
    const { model, calls } = recordingEmbedder();
    const refusal = await model.infer({ inputs: texts, parameters }).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(ServeFnError);
    expect(refusal).toMatchObject({ code: 'SF_ERR_BAD_REQUEST', statusCode: 400, message });
    expect(calls).toEqual([]);
  });
});
