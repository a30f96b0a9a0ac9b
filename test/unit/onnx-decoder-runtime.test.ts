import { beforeAll, describe, expect, it } from 'vitest';
import type { OnnxDecoderRuntime } from '../../src/instance/onnx-decoder-runtime.js';
import { decoderLayout } from '../../src/instance/onnx-decoder-runtime.js';
import type { DecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { referenceGreedy, referenceLogits } from '../helpers/decoder-reference.js';
import { argmax, decoderRuntime, maxDifference } from '../helpers/decoder-runtime-fixture.js';

const TOLERANCE = 1e-4;
const prompt = (length: number, offset = 0): number[] => Array.from({ length }, (_, i) => (i * 37 + offset * 11 + 3) % 290);

for (const family of ['qwen3', 'qwen2'] as const) {
  describe(`OnnxDecoderRuntime (${family}-shaped decoder)`, () => {
    let runtime: OnnxDecoderRuntime;
    let folder: DecoderFolder;
    let vocab: number;
    let nextId = 1;
    beforeAll(async () => {
      ({ runtime, folder } = await decoderRuntime({ family }));
      vocab = runtime.vocabSize;
    });
    const expectClose = (actual: Float32Array, tokens: readonly number[]): void => {
      expect(maxDifference(actual, referenceLogits(folder.weights, tokens).at(-1)!)).toBeLessThan(TOLERANCE);
    };

    it('prefill logits of every position equal the reference', async () => {
      const tokens = prompt(9);
      const { rows } = await runtime.step([{ sequenceId: nextId++, cachedLength: 0, tokenIds: tokens, logits: 'all' }]);
      const expected = referenceLogits(folder.weights, tokens);
      for (let i = 0; i < tokens.length; i++) expect(maxDifference(rows[0]!.subarray(i * vocab, (i + 1) * vocab), expected[i]!)).toBeLessThan(TOLERANCE);
    });

    it('cached decode equals a full recompute at every step', async () => {
      const id = nextId++;
      const tokens = prompt(6, 1);
      let logits = (await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: tokens, logits: 'last' }])).rows[0]!;
      for (let step = 0; step < 8; step++) {
        expectClose(logits, tokens);
        const next = argmax(logits);
        logits = (await runtime.step([{ sequenceId: id, cachedLength: tokens.length, tokenIds: [next], logits: 'last' }])).rows[0]!;
        tokens.push(next);
      }
      expect(runtime.cachedLength(id)).toBe(tokens.length);
    });

    it('a batch of sequences of different lengths decodes exactly as each alone', async () => {
      const prompts = [prompt(3, 2), prompt(11, 3), prompt(7, 4), prompt(1, 5)];
      const ids = prompts.map(() => nextId++);
      const sequences = prompts.map((p) => [...p]);
      // One step holds four prefills of different lengths; later steps decode all four together.
      let rows = (await runtime.step(ids.map((sequenceId, i) => ({ sequenceId, cachedLength: 0, tokenIds: prompts[i]!, logits: 'last' as const })))).rows;
      for (let step = 0; step < 5; step++) {
        rows.forEach((logits, i) => expectClose(logits!, sequences[i]!));
        const next = rows.map((logits) => argmax(logits!));
        rows = (await runtime.step(ids.map((sequenceId, i) => ({ sequenceId, cachedLength: sequences[i]!.length, tokenIds: [next[i]!], logits: 'last' as const })))).rows;
        next.forEach((token, i) => sequences[i]!.push(token));
      }
      // A prefill chunk joining running decodes in one step.
      const late = nextId++;
      const latePrompt = prompt(5, 6);
      const mixed = await runtime.step([
        { sequenceId: ids[0]!, cachedLength: sequences[0]!.length, tokenIds: [argmax(rows[0]!)], logits: 'last' },
        { sequenceId: late, cachedLength: 0, tokenIds: latePrompt, logits: 'last' },
      ]);
      expectClose(mixed.rows[0]!, [...sequences[0]!, argmax(rows[0]!)]);
      expectClose(mixed.rows[1]!, latePrompt);
    });

    it('chunked prefill equals one-shot prefill', async () => {
      const id = nextId++;
      const tokens = prompt(13, 7);
      const first = await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: tokens.slice(0, 5), logits: 'none' }]);
      expect(first.rows[0]).toBeUndefined();
      await runtime.step([{ sequenceId: id, cachedLength: 5, tokenIds: tokens.slice(5, 10), logits: 'none' }]);
      const last = await runtime.step([{ sequenceId: id, cachedLength: 10, tokenIds: tokens.slice(10), logits: 'last' }]);
      expectClose(last.rows[0]!, tokens);
    });

    it('preempt-and-recompute gives the same greedy continuation', async () => {
      const id = nextId++;
      const start = prompt(4, 8);
      const tokens = [...start];
      let logits = (await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: tokens, logits: 'last' }])).rows[0]!;
      for (let i = 0; i < 3; i++) {
        tokens.push(argmax(logits));
        logits = (await runtime.step([{ sequenceId: id, cachedLength: tokens.length - 1, tokenIds: [tokens.at(-1)!], logits: 'last' }])).rows[0]!;
      }
      runtime.release([id]);
      expect(runtime.cachedLength(id)).toBe(0);
      // Recomputed (vLLM's RECOMPUTE): the prompt and the tokens generated so far, as one prefill.
      logits = (await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: tokens, logits: 'last' }])).rows[0]!;
      for (let i = 0; i < 3; i++) {
        tokens.push(argmax(logits));
        logits = (await runtime.step([{ sequenceId: id, cachedLength: tokens.length - 1, tokenIds: [tokens.at(-1)!], logits: 'last' }])).rows[0]!;
      }
      expect(tokens.slice(start.length)).toEqual(referenceGreedy(folder.weights, start, 6));
    });

    it('truncates to cachedLength before appending, and a copied prefix gives identical logits', async () => {
      const id = nextId++;
      const tokens = prompt(10, 9);
      await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: tokens, logits: 'none' }]);
      const other = [...tokens.slice(0, 6), 1, 2];
      const rewound = await runtime.step([{ sequenceId: id, cachedLength: 6, tokenIds: [1, 2], logits: 'last' }]);
      expectClose(rewound.rows[0]!, other);
      const copy = nextId++;
      runtime.copyPrefix(id, copy, 6);
      const hit = await runtime.step([{ sequenceId: copy, cachedLength: 6, tokenIds: [1, 2], logits: 'last' }]);
      expect(maxDifference(hit.rows[0]!, rewound.rows[0]!)).toBe(0);
      await expect(runtime.step([{ sequenceId: copy, cachedLength: 99, tokenIds: [1], logits: 'last' }])).rejects.toThrow(/holds 8 tokens/);
    });
  });
}

describe('OnnxDecoderRuntime between steps', () => {
  it("an unchanged batch of decodes feeds the last step's present back as its past; a changed batch and an idle cached prefix stay exact", async () => {
    const runs: { feeds: Record<string, { data: unknown; shape: readonly number[] }>; produced: Record<string, { data: unknown }> }[] = [];
    const { runtime, folder } = await decoderRuntime({ family: 'qwen3' }, (feeds, produced) => runs.push({ feeds, produced }));
    const expectClose = (actual: Float32Array | undefined, tokens: readonly number[]): void => {
      expect(maxDifference(actual!, referenceLogits(folder.weights, tokens).at(-1)!)).toBeLessThan(TOLERANCE);
    };
    const sequences = [prompt(4, 1), prompt(9, 2), prompt(6, 3)];
    const ids = [1, 2, 3];
    const rows = [...(await runtime.step(ids.map((sequenceId, i) => ({ sequenceId, cachedLength: 0, tokenIds: sequences[i]!, logits: 'last' as const })))).rows];
    // Three prefill chunks of different lengths: three runs, none padded.
    expect(runs.map((r) => r.feeds.input_ids!.shape)).toEqual([[1, 4], [1, 9], [1, 6]]);
    const decode = async (active: readonly number[]): Promise<void> => {
      const next = active.map((i) => argmax(rows[i]!));
      const out = (await runtime.step(active.map((i, k) => ({ sequenceId: ids[i]!, cachedLength: sequences[i]!.length, tokenIds: [next[k]!], logits: 'last' as const })))).rows;
      active.forEach((i, k) => {
        sequences[i]!.push(next[k]!);
        rows[i] = out[k];
        expectClose(rows[i], sequences[i]!);
      });
    };
    await decode([0, 1, 2]);
    const gathered = runs.at(-1)!;
    await decode([0, 1, 2]);
    const reused = runs.at(-1)!;
    expect(reused.feeds['past_key_values.0.key']!.data).toBe(gathered.produced['present.0.key']!.data);
    expect(reused.feeds['past_key_values.1.value']!.data).toBe(gathered.produced['present.1.value']!.data);
    // Sequence 2 is kept as a cached prefix while the other two decode on: the batch changed, so its past is gathered anew.
    await decode([0, 2]);
    expect(runs.at(-1)!.feeds['past_key_values.0.key']!.data).not.toBe(reused.produced['present.0.key']!.data);
    await decode([0, 2]);
    runtime.copyPrefix(2, 9, 9);
    const hit = await runtime.step([{ sequenceId: 9, cachedLength: 9, tokenIds: [7], logits: 'last' }]);
    expectClose(hit.rows[0], [...prompt(9, 2), 7]);
    await decode([0, 1, 2]);
  });
});

describe('OnnxDecoderRuntime with FP16 logits', () => {
  it('reads a half-precision export\'s logits as float32', async () => {
    const { runtime, folder } = await decoderRuntime({ family: 'qwen3', halfLogits: true });
    const tokens = prompt(5, 3);
    const { rows } = await runtime.step([{ sequenceId: 1, cachedLength: 0, tokenIds: tokens, logits: 'last' }]);
    expect(rows[0]).toBeInstanceOf(Float32Array);
    expect(maxDifference(rows[0]!, referenceLogits(folder.weights, tokens).at(-1)!)).toBeLessThan(2e-2);
  });
});

describe('decoderLayout', () => {
  it('refuses a model without a KV cache, naming what is missing', () => {
    const ids = { name: 'input_ids', datatype: 'INT64' as const, shape: [-1, -1] };
    expect(() => decoderLayout('m', [ids], [])).toThrow(/lack attention_mask, position_ids/);
    const inputs = ['attention_mask', 'position_ids'].map((name) => ({ ...ids, name }));
    expect(() => decoderLayout('m', [ids, ...inputs], [{ name: 'logits', datatype: 'FP32', shape: [-1, -1, 10] }])).toThrow(/text-generation-with-past/);
  });
});
