import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerationChunk, SamplingParams, ServedGenerator } from '../../src/generation/text-generator.js';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { writeDecoderFolder, type DecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { referenceGreedy } from '../helpers/decoder-reference.js';
import { greedy } from '../helpers/fake-decoder.js';
import { thrown } from '../helpers/thrown.js';

/** Generative folders served with no code: the decoder on its worker-thread instance, the scheduler on the HTTP thread. */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-generators-'));
let qwen3: DecoderFolder;
let qwen2: DecoderFolder;
let server: ServeFnServer;

beforeAll(async () => {
  qwen3 = writeDecoderFolder(join(root, 'qwen3-tiny'), { family: 'qwen3' });
  qwen2 = writeDecoderFolder(join(root, 'qwen2-tiny'), { family: 'qwen2', modelPath: 'model.onnx' });
  server = new ServeFnServer({ models: [], generativeFolders: [qwen3.dir, qwen2.dir], collectProcessMetrics: false });
  await server.start();
}, 60_000);
afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

const served = (name: string): ServedGenerator => server.generators.find((g) => g.generator.name === name)!;

async function collect(generation: AsyncIterable<GenerationChunk>): Promise<GenerationChunk[]> {
  const chunks: GenerationChunk[] = [];
  for await (const chunk of generation) chunks.push(chunk);
  return chunks;
}
const tokensOf = (chunks: readonly GenerationChunk[]): number[] => chunks.flatMap((c) => c.tokens.map((t) => t.tokenId));

describe('generative model folders', () => {
  it("reads config.json, generation_config.json and tokenizer_config.json: context, every eos id, sampling defaults, Qwen3's chat template", async () => {
    const { generator, tokenizer, chatTemplate } = served('qwen3-tiny');
    expect(generator.maxModelLen).toBe(256);
    expect(generator.eosTokenIds).toEqual(qwen3.eosTokenIds);
    expect(generator.vocabSize).toBe(qwen3.weights.shape.vocab);
    expect(generator.defaults).toEqual({ temperature: 0.6, topK: 20, topP: 0.95 });
    expect(chatTemplate?.template).toContain('<|im_start|>assistant');
    expect(chatTemplate?.eosToken).toBe('<|im_end|>');
    const ids = await tokenizer.encode('<|im_start|>user\nhi<|im_end|>', false);
    expect(ids[0]).toBe(qwen3.tokenizer.ids['<|im_start|>']);
    expect(ids.at(-1)).toBe(qwen3.tokenizer.ids['<|im_end|>']);
    expect(await tokenizer.decode(ids, true)).toBe('user\nhi');
    expect(tokenizer.tokenText(qwen3.tokenizer.ids['<think>'])).toBe('<think>');
  });

  it('generates greedily what the float64 reference generates, for concurrent requests of both shapes', async () => {
    const prompts = [[5, 9, 200, 31], [7], [40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]];
    const runs = [...prompts.map((p) => ({ folder: qwen3, name: 'qwen3-tiny', prompt: p })), ...prompts.map((p) => ({ folder: qwen2, name: 'qwen2-tiny', prompt: p }))];
    const outputs = await Promise.all(runs.map(({ name, prompt }) => collect(served(name).generator.generate({ requestId: String(prompt), promptTokenIds: prompt, sampling: greedy(6, { ignoreEos: true }) }))));
    outputs.forEach((chunks, i) => {
      expect(tokensOf(chunks)).toEqual(referenceGreedy(runs[i]!.folder.weights, runs[i]!.prompt, 6));
      expect(chunks.at(-1)!.finishReason).toBe('length');
    });
  });

  it('a seeded request draws the same tokens alone and in company', async () => {
    const { generator } = served('qwen3-tiny');
    const sampling: SamplingParams = { ...greedy(8, { ignoreEos: true }), temperature: 1, seed: 1234 };
    const alone = tokensOf(await collect(generator.generate({ requestId: 'a', promptTokenIds: [3, 4, 5], sampling })));
    const company = [11, 12, 13].map((t) => generator.generate({ requestId: String(t), promptTokenIds: [t, t + 1], sampling: { ...sampling, seed: t } }));
    const again = generator.generate({ requestId: 'b', promptTokenIds: [3, 4, 5], sampling });
    expect(tokensOf(await collect(again))).toEqual(alone);
    await Promise.all(company.map(collect));
  });

  it('refuses a prompt whose max_tokens runs past the context with a 400', () => {
    const err = thrown(() => served('qwen3-tiny').generator.generate({ requestId: 'x', promptTokenIds: Array(250).fill(3), sampling: greedy(10) }));
    expect(err).toMatchObject({ code: 'SF_ERR_GENERATION_CONTEXT_EXCEEDED', statusCode: 400 });
  });

  it("counts vLLM's metrics under their names, agreeing with what was generated", async () => {
    const before = await server.app.inject({ url: '/metrics' });
    const count = (text: string, series: string): number => Number(text.match(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm'))?.[1] ?? 0);
    const label = '{model_name="qwen2-tiny"}';
    const chunks = await collect(served('qwen2-tiny').generator.generate({ requestId: 'm', promptTokenIds: [1, 2, 3], sampling: greedy(4, { ignoreEos: true }) }));
    const after = (await server.app.inject({ url: '/metrics' })).body;
    expect(count(after, `vllm:generation_tokens_total${label}`) - count(before.body, `vllm:generation_tokens_total${label}`)).toBe(tokensOf(chunks).length);
    expect(count(after, `vllm:prompt_tokens_total${label}`) - count(before.body, `vllm:prompt_tokens_total${label}`)).toBe(3);
    const success = 'vllm:request_success_total{model_name="qwen2-tiny",finished_reason="length"}';
    expect(count(after, success) - count(before.body, success)).toBe(1);
    expect(count(after, `vllm:time_to_first_token_seconds_count${label}`) - count(before.body, `vllm:time_to_first_token_seconds_count${label}`)).toBe(1);
    expect(count(after, `vllm:inter_token_latency_seconds_count${label}`) - count(before.body, `vllm:inter_token_latency_seconds_count${label}`)).toBe(3);
    for (const series of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc', 'vllm:num_preemptions_total']) expect(after).toContain(`${series}${label} 0`);
    expect(after).toMatch(/^vllm:e2e_request_latency_seconds_count\{model_name="qwen2-tiny"\} \d+$/m);
    expect(after).toMatch(/^vllm:request_queue_time_seconds_count\{model_name="qwen2-tiny"\} \d+$/m);
  });
});

describe('folders that are not decoder exports', () => {
  it('names what is missing, and refuses an ONNX file without a KV cache', async () => {
    const dir = join(root, 'broken');
    writeDecoderFolder(dir);
    rmSync(join(dir, 'onnx'), { recursive: true });
    const missing = new ServeFnServer({ models: [], generativeFolders: [dir], collectProcessMetrics: false });
    await expect(missing.start()).rejects.toThrow(/not a decoder export: a decoder export \(onnx\/model\.onnx or model\.onnx; optimum-cli export onnx --task text-generation-with-past\) missing/);
    mkdirSync(join(dir, 'onnx'));
    writeFileSync(join(dir, 'onnx/model.onnx'), buildAddSubModel());
    const noCache = new ServeFnServer({ models: [], generativeFolders: [dir], collectProcessMetrics: false });
    await expect(noCache.start()).rejects.toMatchObject({ code: 'SF_ERR_DECODER_INVALID' });
  });
});
