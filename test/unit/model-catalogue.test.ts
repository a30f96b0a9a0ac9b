import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { Endpoint, Model } from '../../src/decorators/index.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import type { ModelClass } from '../../src/definition/model-definition.js';
import { DecoratedModel } from '../../src/inference/decorated-model.js';
import { ModelCatalogue, type ServerModel } from '../../src/inference/model-catalogue.js';
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

/** A server model of any kind: the catalogue only reads its name and version. */
function served(name: string, version = '1'): ServerModel {
  const model = simpleModel();
  return { info: { ...model.info, name, version }, ready: () => true, infer: (request) => model.infer(request), indexEntry: () => ({ name, version, state: 'READY' }) };
}

describe('ModelCatalogue.of: one registry of served names', () => {
  const empty = () => new FakeRepository([], { controlMode: 'none' });

  it('refuses one name in two kinds, naming both kinds', () => {
    const kinds = [{ kind: 'text model', models: [served('same')] }, { kind: 'speech model', models: [served('other'), served('same')] }];
    expect(() => ModelCatalogue.of(kinds, empty())).toThrow(expect.objectContaining({
      code: 'SF_ERR_MODEL_NAME_TAKEN',
      message: "The text model and the speech model: two models would be served as 'same'. Give one another name: rename its folder or @Model, or pass --served-model-name.",
    }));
  });

  it('refuses one name twice in a kind, unless the kind has versions and the versions differ', () => {
    expect(() => ModelCatalogue.of([{ kind: 'generative model', models: [served('gen'), served('gen', '2')] }], empty())).toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_NAME_TAKEN' }));
    expect(() => ModelCatalogue.of([{ kind: '@Model class', versioned: true, models: [served('m'), served('m')] }], empty())).toThrow(expect.objectContaining({ code: 'SF_ERR_MODEL_NAME_TAKEN' }));
    const versions = ModelCatalogue.of([{ kind: '@Model class', versioned: true, models: [served('m'), served('m', '2')] }, { kind: 'image model', models: [served('img')] }], empty());
    expect(versions.models().map((m) => `${m.info.name}:${m.info.version}`)).toEqual(['img:1', 'm:1', 'm:2']);
  });

  it("refuses a repository folder named as one of the server's own models, and accepts distinct names", async () => {
    const repository = new FakeRepository([simpleModel()], { controlMode: 'explicit' });
    await expect(ModelCatalogue.of([{ kind: 'text model', models: [served('simple')] }], repository).refuseRepositoryNames()).rejects.toThrow(expect.objectContaining({
      code: 'SF_ERR_MODEL_NAME_TAKEN',
      message: expect.stringContaining("The repository model and the text model: two models would be served as 'simple'"),
    }));
    await expect(ModelCatalogue.of([{ kind: 'text model', models: [served('other')] }], repository).refuseRepositoryNames()).resolves.toBeUndefined();
  });
});
