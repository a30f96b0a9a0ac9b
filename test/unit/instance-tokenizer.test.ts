import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ModelContextData } from '../../src/definition/model-context.js';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import type { VersionBuilderContext } from '../../src/model-repository/model-version-builder.js';
import { InstanceTokenizer } from '../../src/text/instance-tokenizer.js';
import { TextTokenizer, type TextEncoding } from '../../src/tokenizer/tokenizer.js';
import { QWEN3_TOKENIZER_DIR, WORDPIECE_DIR } from '../fixtures/text/text-model-folders.js';

/**
 * A text model's tokenizer on an instance of its own (TEI's tokenization workers): the encodings
 * that come back are the in-thread tokenizer's, field for field, and the HTTP thread's copy of the
 * tokenizer never encodes.
 */
const builder: VersionBuilderContext = {
  recorder: new InferenceRecorder({ collectProcessMetrics: false }), log: () => undefined,
  infer: () => Promise.reject(new Error('unused')), resolve: () => { throw new Error('unused'); },
};

function contextOf(name: string): ModelContextData {
  return { modelName: name, modelVersion: '1', instanceName: `${name}_0`, instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: '/', config: { name } };
}

function fields(encoding: TextEncoding): Record<string, unknown> {
  return { ...encoding, ids: [...encoding.ids], typeIds: [...encoding.typeIds], special: [...encoding.special], sequenceIds: [...encoding.sequenceIds] };
}

describe.each([
  ['WordPiece', join(WORDPIECE_DIR, 'tokenizer.json')],
  ['Qwen3 byte-level BPE', join(QWEN3_TOKENIZER_DIR, 'tokenizer.json')],
])('a %s tokenizer on an instance', (_kind, file) => {
  let reference: TextTokenizer;
  let local: TextTokenizer;
  let tokenizer: InstanceTokenizer;
  beforeAll(async () => {
    reference = await TextTokenizer.fromFile(file);
    local = await TextTokenizer.fromFile(file);
    tokenizer = new InstanceTokenizer(local, file, contextOf('tok'), builder);
    await tokenizer.start();
  }, 60_000);
  afterAll(() => tokenizer.stop());

  const long = 'Paris is the capital of France and the quick brown fox jumps over the lazy dog 深度学习模型 😀';

  it('encodes texts, pairs and cuts exactly as the tokenizer in this thread, off this thread', async () => {
    const encode = vi.spyOn(local, 'encode');
    const encodePair = vi.spyOn(local, 'encodePair');
    const cases = [
      (t: TextTokenizer | InstanceTokenizer) => t.encode(long),
      (t: TextTokenizer | InstanceTokenizer) => t.encode(long, { offsets: true }),
      (t: TextTokenizer | InstanceTokenizer) => t.encode(long, { maxLength: 7, direction: 'left' }),
      (t: TextTokenizer | InstanceTokenizer) => t.encode(long, { addSpecialTokens: false }),
      (t: TextTokenizer | InstanceTokenizer) => t.encodePair('how do I bake bread', long, { maxLength: 12, offsets: true }),
    ];
    // All at once: they share calls to the instance.
    const [served, expected] = await Promise.all([Promise.all(cases.map((c) => c(tokenizer))), Promise.all(cases.map((c) => c(reference)))]);
    expect(served.map(fields)).toEqual(expected.map(fields));
    expect(served[0]).not.toHaveProperty('offsets');
    expect(isMainThread && encode.mock.calls.length + encodePair.mock.calls.length).toBe(0);
  });

  it('answers the vocabulary, the pad id and decoding from this thread', async () => {
    expect([tokenizer.vocabSize, tokenizer.padId, tokenizer.specialTokenCount(true)]).toEqual([reference.vocabSize, reference.padId, reference.specialTokenCount(true)]);
    const { ids } = await tokenizer.encode(long);
    expect(await tokenizer.decode([...ids], true)).toBe(await reference.decode([...ids], true));
    expect(tokenizer.idToToken(ids[1]!)).toBe(reference.idToToken(ids[1]!));
  });
});

describe('an instance tokenizer', () => {
  it('is ready only while its instance runs, and refuses texts once stopped', async () => {
    const file = join(WORDPIECE_DIR, 'tokenizer.json');
    const reference = await TextTokenizer.fromFile(file);
    const tokenizer = new InstanceTokenizer(await TextTokenizer.fromFile(file), file, contextOf('stopped'), builder);
    expect(tokenizer.ready()).toBe(false);
    await tokenizer.start();
    expect(tokenizer.ready()).toBe(true);
    const queued = Array.from({ length: 50 }, (_, i) => tokenizer.encode(`text ${i}`));
    await tokenizer.stop();
    // What was queued before the stop is encoded; what comes after is refused with 503.
    const expected = await Promise.all(Array.from({ length: 50 }, (_, i) => reference.encode(`text ${i}`)));
    expect((await Promise.all(queued)).map(fields)).toEqual(expected.map(fields));
    expect(tokenizer.ready()).toBe(false);
    await expect(tokenizer.encode('late')).rejects.toMatchObject({ statusCode: 503 });
  }, 60_000);

  it("drops a text still queued for the instance once its caller's signal aborts, and encodes the rest", async () => {
    const file = join(WORDPIECE_DIR, 'tokenizer.json');
    const reference = await TextTokenizer.fromFile(file);
    const tokenizer = new InstanceTokenizer(await TextTokenizer.fromFile(file), file, contextOf('cancelled'), builder);
    await tokenizer.start();
    try {
      // More texts than the instance takes in its running call and the one queued behind it (256 each):
      // the texts after them wait in the queue, where a signal can still remove them.
      const ahead = Array.from({ length: 600 }, (_, i) => tokenizer.encode(`text ${i}`));
      const leaving = new AbortController();
      const left = tokenizer.encodePair('a question', 'an answer', {}, leaving.signal);
      const after = tokenizer.encode('after');
      leaving.abort();
      await expect(left).rejects.toMatchObject({ code: 'SF_ERR_CANCELLED' });
      expect(fields(await after)).toEqual(fields(await reference.encode('after')));
      expect(await Promise.all(ahead)).toHaveLength(600);
      // A signal already aborted is refused before it queues.
      await expect(tokenizer.encode('gone', {}, leaving.signal)).rejects.toMatchObject({ code: 'SF_ERR_CANCELLED' });
    } finally {
      await tokenizer.stop();
    }
  }, 60_000);
});
