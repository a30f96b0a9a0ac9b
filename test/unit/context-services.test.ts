import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ContextServices } from '../../src/runtime/context-services.js';
import { TextTokenizer } from '../../src/text/tokenizer.js';

const fixtures = fileURLToPath(new URL('../fixtures/text/', import.meta.url));

function services(): ContextServices {
  return new ContextServices(
    { modelName: 'm', modelVersion: '1', instanceName: 'm_0', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: fixtures, config: {} },
    () => Promise.reject(new Error('not used')),
  );
}

describe('ctx.loadTokenizer', () => {
  it('loads a tokenizer.json from the model folder, the one text serving uses', async () => {
    const tokenizer = await services().context.loadTokenizer('wordpiece/tokenizer.json');
    expect(tokenizer).toBeInstanceOf(TextTokenizer);
    const reference = await TextTokenizer.fromFile(`${fixtures}wordpiece/tokenizer.json`);
    expect(Array.from((await tokenizer.encode('the quick brown fox')).ids)).toEqual(Array.from((await reference.encode('the quick brown fox')).ids));
    expect((await tokenizer.encode('fox')).ids[0]).toBe(2);
  });

  it('names the file it could not read', async () => {
    await expect(services().context.loadTokenizer('missing/tokenizer.json')).rejects.toMatchObject({ code: 'SF_ERR_TOKENIZER_INVALID', message: expect.stringContaining('missing/tokenizer.json') });
  });
});
