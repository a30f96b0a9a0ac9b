import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Endpoint, Instances, Model } from '../../src/decorators/index.js';
import { ServeFnServer, type ServeOptions } from '../../src/serve-fn-server.js';
import { writeDecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { writeBertEncoder } from '../fixtures/text/text-model-folders.js';
import { makeTinyFunAsrModels, missingPython } from '../helpers/speech-python.js';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { writeFiles } from '../fixtures/repository/repository-files.js';

/**
 * One registry of served names: the catalogue refuses a name two models of any kinds would share,
 * before any instance starts, so no model is left unreachable behind another of its name.
 */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-model-names-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

@Model({ name: 'shared' })
@Instances(1, { inline: true })
class SharedName {
  @Endpoint('/shared')
  async run(): Promise<string> {
    return 'decorated';
  }
}

async function refusal(options: Omit<ServeOptions, 'collectProcessMetrics'>): Promise<unknown> {
  const server = new ServeFnServer({ ...options, collectProcessMetrics: false });
  try {
    await server.start();
  } catch (err) {
    return err;
  } finally {
    await server.close();
  }
  return undefined;
}

const taken = (kinds: string, name: string) => expect.objectContaining({ code: 'SF_ERR_MODEL_NAME_TAKEN', message: expect.stringContaining(`${kinds}: two models would be served as '${name}'`) });

describe('one name, two models: the server refuses to start', () => {
  it('a text folder and a generative folder of one name', async () => {
    const text = join(root, 'text', 'shared');
    writeBertEncoder(text);
    const generative = writeDecoderFolder(join(root, 'generative', 'shared')).dir;
    expect(await refusal({ models: [], textFolders: [text], generativeFolders: [generative] })).toEqual(taken('The text model and the generative model', 'shared'));
  }, 60_000);

  it('a @Model class and a text folder of its name', async () => {
    const text = join(root, 'class', 'shared');
    writeBertEncoder(text);
    expect(await refusal({ models: [SharedName], textFolders: [text] })).toEqual(taken('The @Model class and the text model', 'shared'));
  }, 60_000);

  const missing = missingPython(['onnx', 'numpy']);
  it.skipIf(missing)(`a speech folder and a text folder served under its name${missing ? ` (skipped: ${missing})` : ''}`, async () => {
    const speech = makeTinyFunAsrModels(join(root, 'speech')).paraformer;
    const text = join(root, 'speech-text', 'bge');
    writeBertEncoder(text);
    const err = await refusal({ models: [], textFolders: [text], text: { servedModelName: 'Paraformer-tiny' }, speechFolders: [speech] });
    expect(err).toEqual(taken('The text model and the speech model', 'Paraformer-tiny'));
  }, 60_000);
});

describe('one name, two models, a repository in poll mode', () => {
  it('leaves a folder that appears under a served name unloaded, its index entry saying why', async () => {
    const repo = join(root, 'poll');
    writeFiles(repo, { 'other/1/model.onnx': buildAddSubModel({ size: 4 }) });
    const server = new ServeFnServer({ models: [SharedName], repository: { root: repo, controlMode: 'poll', pollIntervalMs: 3_600_000 }, collectProcessMetrics: false });
    await server.start();
    try {
      writeFiles(repo, { 'shared/1/model.onnx': buildAddSubModel({ size: 4 }) });
      await server.repository!.poll();
      const index = (await server.app.inject({ method: 'POST', url: '/v2/repository/index', payload: {} })).json() as { name: string; state: string; reason?: string }[];
      // The catalogue lists the @Model class under its name; the repository's record says why its folder is not served.
      expect(index.filter((e) => e.name === 'shared')).toEqual([expect.objectContaining({ state: 'READY' })]);
      expect(server.repository!.models('shared')).toEqual([]);
      expect((await server.repository!.index()).find((e) => e.name === 'shared')).toEqual({ name: 'shared', state: 'UNAVAILABLE', reason: expect.stringContaining("The repository model and the @Model class: two models would be served as 'shared'") });
      expect((await server.app.inject({ method: 'POST', url: '/shared' })).body).toBe('decorated');
    } finally {
      await server.close();
    }
  }, 60_000);
});
