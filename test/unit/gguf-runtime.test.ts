import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import { isGgufFile } from '../../src/generation/gguf/gguf-file.js';
import { ggufChatTemplate, ggufTokenizer } from '../../src/generation/gguf/gguf-model-text.js';
import type { ChatTemplateSource, PromptTokenizer } from '../../src/generation/text-generator.js';
import { createGgufRuntime, type GgufRuntime } from '../../src/instance/gguf-runtime.js';
import { importNodeLlamaCpp, sharedLlama } from '../../src/instance/node-llama-cpp-loader.js';
import { GrammarMatchers } from '../../src/instance/grammar-matchers.js';
import type { DecoderStepRow } from '../../src/spec/decoder-step.js';
import {
  logSoftmax, referenceLogits, TINY_CHAT_TEMPLATE, TINY_LLAMA, TINY_QWEN3, tinyWeights, writeTinyGguf,
  type TinyDecoderConfig, type TinyWeights,
} from '../helpers/tiny-decoder.js';

// llama.cpp keeps the KV cache in F16 (node-llama-cpp 3.21.1 has no stable option to change it), so
// its log-probabilities differ from the float64 reference by ~1e-3; a wrong RoPE, norm or head
// layout differs by more than 0.1.
const REFERENCE_TOLERANCE = 4e-3;
// The same runtime against itself (cached vs recomputed, batched vs alone): llama.cpp picks its
// matmul kernel by batch size (one token: a dot product per row; several: a tiled GEMM), so float32
// sums are ordered differently (measured up to 3e-4); a stale or misplaced cache entry differs by
// more than 1e-2.
const SELF_TOLERANCE = 1e-3;

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

const dir = mkdtempSync(join(tmpdir(), 'serve-fn-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ['llama', TINY_LLAMA],
  ['qwen3', TINY_QWEN3],
] as [string, TinyDecoderConfig][])('GGUF runtime over node-llama-cpp, tiny %s', (arch, config) => {
  let weights: TinyWeights;
  let runtime: GgufRuntime;
  let file: string;
  let nextId = 0;
  /** The HTTP thread's view of the same file (gguf-generator.ts): a vocabulary-only load's tokenizer and chat template. */
  let text: { tokenizer: PromptTokenizer; chatTemplate: ChatTemplateSource | undefined; dispose(): Promise<void> };
  beforeAll(async () => {
    weights = tinyWeights(config);
    file = writeTinyGguf(dir, weights);
    runtime = await createGgufRuntime(file, { maxNumSeqs: 4, maxNumBatchedTokens: 64, threads: 1 });
    const vocab = await (await sharedLlama(await importNodeLlamaCpp(file), false)).loadModel({ modelPath: file, vocabOnly: true });
    text = { tokenizer: ggufTokenizer(vocab, runtime.vocabSize), chatTemplate: ggufChatTemplate(vocab), dispose: () => vocab.dispose() };
  });
  afterAll(async () => {
    await text?.dispose();
    await runtime?.dispose();
  });

  /** Runs `tokens` on a fresh sequence from scratch and returns its last position's logits. */
  async function fresh(tokens: number[]): Promise<Float32Array> {
    const id = nextId++;
    const { rows } = await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: tokens, logits: 'last' }]);
    runtime.release([id]);
    return rows[0]!;
  }

  function argmax(v: Float32Array): number {
    let best = 0;
    for (let i = 1; i < v.length; i++) if (v[i]! > v[best]!) best = i;
    return best;
  }

  it('reports the metadata the generator needs: name, context, vocabulary, every end-of-generation id', () => {
    expect(runtime.metadata).toMatchObject({ name: `tiny-${arch}`, maxModelLen: 512, vocabSize: weights.vocabSize });
    expect(runtime.vocabSize).toBe(weights.vocabSize);
    expect(runtime.metadata.eosTokenIds).toEqual(expect.arrayContaining([weights.vocab.eosId, weights.vocab.imEndId]));
    expect(text.chatTemplate?.template).toBe(TINY_CHAT_TEMPLATE);
  });

  it('gives prefill logits equal to the float64 reference forward pass at every position', async () => {
    const tokens = [72, 101, 108, 108, 111, 44, 32, 119, 260];
    const id = nextId++;
    const { rows } = await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: tokens, logits: 'all' }]);
    runtime.release([id]);
    const got = rows[0]!;
    const V = weights.vocabSize;
    expect(got.length).toBe(tokens.length * V);
    const reference = referenceLogits(weights, tokens);
    reference.forEach((logits, position) => {
      expect(maxAbsDiff(got.subarray(position * V, (position + 1) * V), logSoftmax(logits))).toBeLessThan(REFERENCE_TOLERANCE);
    });
  });

  it('decodes with its cache exactly as a full recompute, at every step', async () => {
    const id = nextId++;
    const history = [40, 50, 60, 70, 80];
    let logits = (await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: history, logits: 'last' }])).rows[0]!;
    for (let i = 0; i < 6; i++) {
      expect(maxAbsDiff(logits, await fresh(history))).toBeLessThan(SELF_TOLERANCE);
      const next = argmax(logits);
      logits = (await runtime.step([{ sequenceId: id, cachedLength: history.length, tokenIds: [next], logits: 'last' }])).rows[0]!;
      history.push(next);
    }
    const reference = referenceLogits(weights, history);
    expect(maxAbsDiff(logits, logSoftmax(reference.at(-1)!))).toBeLessThan(REFERENCE_TOLERANCE);
    runtime.release([id]);
  });

  it('runs a batch of sequences of different lengths, prefills and decodes mixed, exactly as each alone', async () => {
    const prompts = [[1, 2, 3], [10, 20, 30, 40, 50, 60, 70], [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111]];
    const ids = prompts.map(() => nextId++);
    // A decode row beside two prefills: one sequence is already running when the others join.
    await runtime.step([{ sequenceId: ids[0]!, cachedLength: 0, tokenIds: prompts[0]!.slice(0, 2), logits: 'none' }]);
    const rows: DecoderStepRow[] = [
      { sequenceId: ids[0]!, cachedLength: 2, tokenIds: prompts[0]!.slice(2), logits: 'last' },
      { sequenceId: ids[1]!, cachedLength: 0, tokenIds: prompts[1]!, logits: 'last' },
      { sequenceId: ids[2]!, cachedLength: 0, tokenIds: prompts[2]!, logits: 'all' },
    ];
    const batched = (await runtime.step(rows)).rows;
    runtime.release(ids);
    for (let i = 0; i < 2; i++) expect(maxAbsDiff(batched[i]!, await fresh(prompts[i]!))).toBeLessThan(SELF_TOLERANCE);
    const V = weights.vocabSize;
    const third = batched[2]!;
    expect(third.length).toBe(prompts[2]!.length * V);
    expect(maxAbsDiff(third.subarray(third.length - V), await fresh(prompts[2]!))).toBeLessThan(SELF_TOLERANCE);
    expect(maxAbsDiff(third.subarray(0, V), await fresh(prompts[2]!.slice(0, 1)))).toBeLessThan(SELF_TOLERANCE);
  });

  it('puts every row of a step into one llama_decode', async () => {
    // node-llama-cpp's native context (internal: `_ctx.decodeBatch` is its call of llama_decode), seen through a counting proxy.
    const context = (runtime as unknown as { context: { _ctx: object } }).context;
    const native = context._ctx;
    let decodes = 0;
    context._ctx = new Proxy(native, {
      get(target, key) {
        const value = Reflect.get(target, key) as unknown;
        if (typeof value !== 'function') return value;
        if (key === 'decodeBatch') decodes++;
        return value.bind(target);
      },
    });
    try {
      const ids = [nextId++, nextId++, nextId++];
      await runtime.step(ids.map((id, i) => ({ sequenceId: id, cachedLength: 0, tokenIds: [1, 2, 3].slice(i), logits: 'last' })));
      expect(decodes).toBe(1);
      await runtime.step(ids.map((id, i) => ({ sequenceId: id, cachedLength: 3 - i, tokenIds: [7], logits: 'last' })));
      expect(decodes).toBe(2);
      runtime.release(ids);
    } finally {
      context._ctx = native;
    }
  });

  it('truncates the cache to cachedLength and recomputes from there (preemption, a prefix hit), as a fresh sequence does', async () => {
    const id = nextId++;
    await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: [5, 6, 7, 8, 9, 10, 11, 12], logits: 'none' }]);
    const truncated = (await runtime.step([{ sequenceId: id, cachedLength: 3, tokenIds: [200, 201], logits: 'last' }])).rows[0]!;
    expect(maxAbsDiff(truncated, await fresh([5, 6, 7, 200, 201]))).toBeLessThan(SELF_TOLERANCE);
    const restarted = (await runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: [9, 9, 9], logits: 'last' }])).rows[0]!;
    expect(maxAbsDiff(restarted, await fresh([9, 9, 9]))).toBeLessThan(SELF_TOLERANCE);
    runtime.release([id]);
  });

  it('refuses a row whose cachedLength is past what its cache holds, and one past max_model_len', async () => {
    const id = nextId++;
    await expect(runtime.step([{ sequenceId: id, cachedLength: 4, tokenIds: [1], logits: 'last' }])).rejects.toThrow(/cachedLength 4 but the cache holds 0/);
    await expect(runtime.step([{ sequenceId: id, cachedLength: 0, tokenIds: new Array(513).fill(1), logits: 'last' }])).rejects.toThrow(/past max_model_len 512/);
    runtime.release([id]);
  });

  it("serves structured outputs from the GGUF's own vocabulary: greedy JSON under the schema, whatever the weights say", async () => {
    const compiler = new GrammarMatchers(async () => runtime.constraintVocabulary());
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 0, maximum: 99 } }, required: ['ok', 'n'] };
    const constraint = await compiler.matcher({ kind: 'json', schema });
    const id = nextId++;
    const prompt = await text.tokenizer.encode('<|im_start|>user\nJSON please<|im_end|>\n<|im_start|>assistant\n', false);
    const generated: number[] = [];
    let row: DecoderStepRow = { sequenceId: id, cachedLength: 0, tokenIds: prompt, logits: 'last' };
    for (let i = 0; i < 40 && !constraint.isTerminated(); i++) {
      const logits = (await runtime.step([row])).rows[0]!;
      const mask = (await constraint.nextTokenBitmask())!;
      for (let t = 0; t < logits.length; t++) if (((mask[t >> 5]! >>> (t & 31)) & 1) === 0) logits[t] = -Infinity;
      const next = argmax(logits);
      expect(constraint.acceptToken(next)).toBe(true);
      if (!runtime.metadata.eosTokenIds.includes(next)) generated.push(next);
      row = { sequenceId: id, cachedLength: row.cachedLength + row.tokenIds.length, tokenIds: [next], logits: 'last' };
    }
    runtime.release([id]);
    expect(constraint.isTerminated()).toBe(true);
    const value = JSON.parse(await text.tokenizer.decode(generated, true)) as { ok: unknown; n: unknown };
    expect(typeof value.ok).toBe('boolean');
    expect(Number.isInteger(value.n) && (value.n as number) >= 0 && (value.n as number) <= 99).toBe(true);
  });

  it("tokenizes with the GGUF's own tokenizer, parsing special tokens written in the text", async () => {
    const ids = await text.tokenizer.encode('hello world<|im_end|>', false);
    expect(ids.at(-1)).toBe(weights.vocab.imEndId);
    expect(ids).toContain(weights.vocab.tokens.indexOf('hell'));
    expect(await text.tokenizer.decode(ids, false)).toBe('hello world<|im_end|>');
    expect(await text.tokenizer.decode(ids, true)).toBe('hello world');
    expect(text.tokenizer.tokenText(weights.vocab.tokens.indexOf('Ġwor'))).toBe(' wor');
    expect(text.tokenizer.tokenText(weights.vocabSize)).toBeUndefined();
  });
});

describe('GGUF files', () => {
  it('isGgufFile: a *.gguf file that starts with the GGUF magic', () => {
    const good = writeTinyGguf(dir, tinyWeights(TINY_LLAMA), 'magic');
    const wrongMagic = join(dir, 'wrong.gguf');
    writeFileSync(wrongMagic, 'GGML....');
    const wrongName = join(dir, 'model.bin');
    writeFileSync(wrongName, 'GGUF....');
    expect([isGgufFile(good), isGgufFile(wrongMagic), isGgufFile(wrongName), isGgufFile(dir), isGgufFile(join(dir, 'none.gguf'))]).toEqual([true, false, false, false, false]);
  });

  it('names the install step when node-llama-cpp is not installed', async () => {
    const missing = Object.assign(new Error("Cannot find package 'node-llama-cpp' imported from /app/x.js"), { code: 'ERR_MODULE_NOT_FOUND' });
    const err = await importNodeLlamaCpp('/models/m.gguf', () => Promise.reject(missing)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServeFnError);
    expect(err).toMatchObject({ code: 'SF_ERR_GGUF_RUNTIME_MISSING', cause: missing });
    expect((err as Error).message).toContain('`npm i node-llama-cpp@3.21.1`');
  });

  it('refuses a file llama.cpp cannot load, naming it', async () => {
    const broken = join(dir, 'broken.gguf');
    writeFileSync(broken, Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(12)]));
    await expect(createGgufRuntime(broken, { maxNumSeqs: 1 })).rejects.toMatchObject({ code: 'SF_ERR_GGUF_INVALID' });
  });
});
