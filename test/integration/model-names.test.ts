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
