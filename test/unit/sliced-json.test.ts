import { describe, expect, it } from 'vitest';
import { slicedJson } from '../../src/server/sliced-json.js';

/** Fixed pseudo-random floats, so a failure reproduces. */
function rows(count: number, width: number, seed = 1): number[][] {
  let x = seed;
  const next = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  return Array.from({ length: count }, () => Array.from(Float32Array.from({ length: width }, next)));
}

describe('slicedJson', () => {
  const cases: Record<string, unknown> = {
    'a TEI /embed answer larger than many slices': rows(32, 1024),
    'a TEI /embed_all answer (inputs × tokens × width)': [rows(5, 64, 2), rows(3, 64, 3)],
    'an OpenAI answer with a model name and usage': {
      object: 'list',
      data: rows(40, 1024, 4).map((embedding, index) => ({ object: 'embedding', embedding, index })),
      model: 'my-embedder "quoted" ünïcödé ✓',
      usage: { prompt_tokens: 12, total_tokens: 12 },
    },
    'a sparse answer': [[{ index: 3, value: 0.5 }, { index: 9, value: 1e-7 }], []],
    'omitted members, nulls, NaN and infinities': { a: undefined, b: null, c: [NaN, Infinity, -0], d: [{ e: undefined }, undefined, null, () => 1], f: () => 1, g: 'x' },
    'objects with toJSON, nested empties, a null prototype': { when: new Date(0), empty: {}, none: [], inner: Object.assign(Object.create(null) as object, { k: [[1], [2]] }) },
    'scalars at the top': 'a "string"\n',
    'a small answer': [[0.1, 0.2, 0.30000000000000004]],
    'mixed arrays': [1, { a: 1 }, 'two', [{ b: [3, 4] }]],
  };
  for (const [name, value] of Object.entries(cases)) {
    it(`writes the bytes JSON.stringify writes: ${name}`, async () => {
      expect((await slicedJson(value)).toString('utf8')).toBe(JSON.stringify(value));
    });
  }

  it('gives the event loop turns while a large answer is written', async () => {
    const answer = rows(64, 1024, 5);
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const written = slicedJson(answer);
    await written;
    counting = false;
    // 64 × 1024 floats are ~1.3 MB of JSON, about twenty slices: JSON.stringify in one go would give none.
    expect(turns).toBeGreaterThanOrEqual(10);
  });
});
