import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GenerativeModel, Instances, Model, ServeFnServer, type DecoderStepResult } from '../../src/index.js';
import { writeDecoderFolder } from '../fixtures/generation/decoder-folders.js';

/** How a @GenerativeModel class's folder and limits are read when the server prepares (no instance starts). */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-class-generators-'));
const moduleUrl = pathToFileURL(join(root, 'index.ts')).href;
let vocab = 0;
beforeAll(() => {
  vocab = writeDecoderFolder(join(root, 'tiny')).weights.shape.vocab;
  // The classes are inline; the module only names the folder their paths start from.
  writeFileSync(join(root, 'index.ts'), 'export {};\n');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

class Hook {
  step(): DecoderStepResult {
    return { rows: [] };
  }

  release(): void {}
}

@Model({ name: 'limited' })
@Instances(1, { inline: true })
@GenerativeModel({ folder: 'tiny', maxModelLen: 64, maxNumSeqs: 2 })
class Limited extends Hook {}

@Model({ name: 'small-cache', version: '3' })
@Instances(1, { inline: true })
@GenerativeModel({ folder: 'tiny', kvCacheTokens: 40 })
class SmallCache extends Hook {}

@Model({ name: 'escaping' })
@Instances(1, { inline: true })
@GenerativeModel({ folder: '../elsewhere' })
class Escaping extends Hook {}

@Model({ name: 'tiny' })
@Instances(1, { inline: true })
@GenerativeModel({ folder: 'tiny' })
class SameNameAsFolder extends Hook {}

const prepared = async (models: ServeFnServer['definitions'][number]['target'][], extra: Partial<ConstructorParameters<typeof ServeFnServer>[0]> = {}): Promise<ServeFnServer> => {
  const server = new ServeFnServer({ models, moduleUrl, collectProcessMetrics: false, ...extra });
  await server.prepare();
  return server;
};

describe('@GenerativeModel classes as the server reads them', () => {
  it("takes the folder's config beside the module; the decorator's limits win over the server's flags; kvCacheTokens bounds the context", async () => {
    const flagged = await prepared([Limited], { generation: { maxModelLen: 128 } });
    const [limited] = flagged.generators;
    expect(limited!.generator.maxModelLen).toBe(64);
    expect(limited!.generator.vocabSize).toBe(vocab);
    expect(limited!.chatTemplate?.template).toContain('<|im_start|>');
    const server = await prepared([Limited, SmallCache]);
    // 40 tokens are two whole 16-token blocks.
    expect(server.generators.find((g) => g.generator.name === 'small-cache')!.generator.maxModelLen).toBe(32);
    expect((await server.app.inject({ method: 'GET', url: '/v1/models' })).json().data.map((m: { id: string }) => m.id).sort()).toEqual(['limited', 'small-cache']);
    // On /v2 the class is its generate view, under its @Model version.
    const metadata = (await server.app.inject({ method: 'GET', url: '/v2/models/small-cache' })).json();
    expect(metadata).toMatchObject({ name: 'small-cache', versions: ['3'], platform: expect.any(String) });
    expect(metadata.inputs.map((i: { name: string }) => i.name)).toContain('text_input');
  });

  it("refuses a folder outside the module's folder, and a name a generative folder takes too", async () => {
    await expect(prepared([Escaping])).rejects.toMatchObject({ code: 'SF_ERR_GENERATIVE_MODEL_INVALID', message: expect.stringContaining("folder '../elsewhere' is not inside") });
    await expect(prepared([SameNameAsFolder], { generativeFolders: [join(root, 'tiny')] })).rejects.toMatchObject({ code: 'SF_ERR_MODEL_NAME_TAKEN', message: expect.stringContaining("two models would be served as 'tiny'") });
  });
});
