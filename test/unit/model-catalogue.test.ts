import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { Endpoint, Model } from '../../src/decorators/index.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import type { ModelClass } from '../../src/definition/model-definition.js';
import { DecoratedModel } from '../../src/inference/decorated-model.js';
import { ModelCatalogue } from '../../src/inference/model-catalogue.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { ModelRuntime } from '../../src/inference/model-runtime.js';
import { FakeRepository, simpleModel, versionedModel } from '../protocol/fake-repository.js';

@Model({ name: 'simple', version: '7' })
class DecoratedSimple {
  @Endpoint('/simple')
  async run(): Promise<string> {
    return 'decorated';
  }
}

@Model({ name: 'alpha' })
class Alpha {
  @Endpoint('/alpha')
  async run(): Promise<string> {
    return 'alpha';
  }
}

/** A decorated model over a runtime that is never started: the catalogue only reads what it is. */
function decorated(target: ModelClass, serving: { phase?: string }): DecoratedModel {
  const runtime = new ModelRuntime(buildDefinition(target), {
    factory: () => {
      throw new Error('not started in this test');
    },
    recorder: new InferenceRecorder({ collectProcessMetrics: false }),
    log: () => undefined,
  });
  return new DecoratedModel(runtime, { notServing: () => serving.phase });
}

describe('ModelCatalogue', () => {
  const serving: { phase?: string } = {};
  const repository = new FakeRepository([simpleModel(), versionedModel('1'), versionedModel('2')], { controlMode: 'explicit' });
  const catalogue = new ModelCatalogue([decorated(DecoratedSimple, serving), decorated(Alpha, serving)], repository);

  it('lists decorated and repository models by name, a decorated name hiding the repository model of that name', () => {
    expect(catalogue.models().map((m) => `${m.info.name}:${m.info.version}`)).toEqual(['alpha:1', 'simple:7', 'versioned:1', 'versioned:2']);
    expect(catalogue.models('simple').map((m) => m.info.platform)).toEqual(['serve-fn']);
    expect(catalogue.models('versioned')).toHaveLength(2);
    expect(catalogue.get('simple').info.version).toBe('7');
    expect(catalogue.get('versioned', '1').info.version).toBe('1');
  });

  it("answers Triton's 404s for an unknown model or version, decorated or not", () => {
    expect(() => catalogue.get('simple', '1')).toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_VERSION_UNKNOWN' }));
    expect(() => catalogue.get('versioned', '9')).toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_VERSION_UNKNOWN' }));
    expect(() => catalogue.get('ghost')).toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_UNKNOWN' }));
  });

  it('indexes decorated models READY while the server serves, UNAVAILABLE with the phase otherwise', async () => {
    expect(await catalogue.index()).toEqual([
      { name: 'alpha', version: '1', state: 'READY' },
      { name: 'simple', version: '7', state: 'READY' },
      { name: 'versioned', version: '1', state: 'READY' },
      { name: 'versioned', version: '2', state: 'READY' },
    ]);
    serving.phase = 'draining';
    try {
      expect(catalogue.get('alpha').ready()).toBe(false);
      expect(await catalogue.index({ readyOnly: true })).toEqual([
        { name: 'versioned', version: '1', state: 'READY' },
        { name: 'versioned', version: '2', state: 'READY' },
      ]);
      expect((await catalogue.index())[0]).toEqual({ name: 'alpha', version: '1', state: 'UNAVAILABLE', reason: 'server is draining' });
    } finally {
      serving.phase = undefined;
    }
  });

  it('refuses to load or unload a decorated model and hands every other name to the repository', async () => {
    await expect(catalogue.load('alpha')).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_NOT_IN_REPOSITORY', statusCode: 400 }));
    await expect(catalogue.unload('simple')).rejects.toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_NOT_IN_REPOSITORY' }));
    await catalogue.load('versioned');
    expect(repository.loads.map((l) => l.name)).toEqual(['versioned']);
    expect(catalogue.controlMode).toBe('explicit');
  });
});
