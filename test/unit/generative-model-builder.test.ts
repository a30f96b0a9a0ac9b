import { describe, expect, it } from 'vitest';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import { GenerativeModel, Model } from '../../src/index.js';
import type { DecoderStepResult, DecoderStepRow } from '../../src/index.js';
import { thrown } from '../helpers/thrown.js';

@Model({ name: 'hooked' })
@GenerativeModel({ folder: 'Qwen3-0.6B', maxModelLen: 128 })
class Hooked {
  step(rows: readonly DecoderStepRow[]): DecoderStepResult {
    return { rows: rows.map(() => undefined) };
  }

  release(): void {}
}

@Model({ name: 'no-release' })
@GenerativeModel({ folder: 'Qwen3-0.6B' })
class NoRelease {
  step(): DecoderStepResult {
    return { rows: [] };
  }
}

@Model({ name: 'misspelt' })
@GenerativeModel({ folder: 'Qwen3-0.6B', maxModelLength: 128 } as never)
class Misspelt extends Hooked {}

@Model({ name: 'zero-seqs' })
@GenerativeModel({ folder: 'Qwen3-0.6B', maxNumSeqs: 0 })
class ZeroSeqs extends Hooked {}

describe('@GenerativeModel', () => {
  it('makes a class with a step hook and no endpoint a model, its declaration frozen in the definition', () => {
    const def = buildDefinition(Hooked);
    expect(def.endpoints).toEqual([]);
    expect(def.generative).toEqual({ folder: 'Qwen3-0.6B', maxModelLen: 128 });
    expect(Object.isFrozen(def.generative)).toBe(true);
  });

  it('refuses a class without release(), a misspelt option and a limit below 1, naming the class', () => {
    expect(thrown(() => buildDefinition(NoRelease))).toMatchObject({ code: 'SF_ERR_GENERATIVE_MODEL_INVALID', message: expect.stringContaining('NoRelease: @GenerativeModel needs a release() method') });
    expect(thrown(() => buildDefinition(Misspelt))).toMatchObject({ code: 'SF_ERR_GENERATIVE_MODEL_INVALID', message: expect.stringContaining("option 'maxModelLength' is not known") });
    expect(thrown(() => buildDefinition(ZeroSeqs))).toMatchObject({ code: 'SF_ERR_GENERATIVE_MODEL_INVALID', message: expect.stringContaining('maxNumSeqs must be an integer >= 1') });
  });
});
