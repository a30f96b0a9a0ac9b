import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { logSoftmax, referenceLogits, TINY_QWEN3, tinyVocab, tinyWeights, writeTinyGguf, type TinyWeights } from '../helpers/tiny-decoder.js';
import { startCli, type RunningCli } from './cli-harness.js';

/**
 * `serve-fn start ./model.gguf`: the tiny Qwen3 GGUF (test/helpers/tiny-decoder.ts) on llama.cpp in
 * the generator's worker, under the iteration scheduler, answered to the official openai SDK. Its
 * greedy tokens must be the float64 reference's argmax continuation of the prompt the server
 * tokenized (/tokenize, which counts what usage.prompt_tokens counts).
 */
// llama.cpp keeps its KV cache in F16: its log-probabilities are within ~4e-3 of the reference (gguf-runtime.test.ts).
const LOGPROB_DIGITS = 2;
const MAX_TOKENS = 6;
const root = scratchFolder('cli-generation-gguf');
let weights: TinyWeights;
let cli: RunningCli;
let client: OpenAI;

beforeAll(async () => {
  mkdirSync(join(root, 'models'), { recursive: true });
  weights = tinyWeights(TINY_QWEN3);
  const file = writeTinyGguf(join(root, 'models'), weights);
  cli = await startCli(['start', file, '--host', '127.0.0.1', '--max-model-len', '128', '--max-num-seqs', '2']);
  await cli.waitForOutput(/serve-fn ready/, 90_000);
  client = new OpenAI({ apiKey: 'unused', baseURL: `${cli.base}/v1`, maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  if (cli) expect(await cli.stop()).toBe(0);
  rmSync(root, { recursive: true, force: true });
}, 60_000);

/** The reference's greedy tokens and their log-probabilities, cut after the first end-of-generation token. */
function reference(prompt: readonly number[]): { tokens: number[]; logprobs: number[] } {
  const vocab = tinyVocab();
  const stops = [vocab.eosId, vocab.imEndId];
  const tokens: number[] = [];
  const logprobs: number[] = [];
  while (tokens.length < MAX_TOKENS && !stops.includes(tokens.at(-1) ?? -1)) {
    const row = logSoftmax(referenceLogits(weights, [...prompt, ...tokens]).at(-1)!);
    let best = 0;
    for (let t = 1; t < row.length; t++) if (row[t]! > row[best]!) best = t;
    tokens.push(best);
    logprobs.push(row[best]!);
  }
  return { tokens, logprobs };
}

describe('openai SDK over serve-fn start <tiny Qwen3 .gguf>', () => {
  it('lists the model by its file name', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny-qwen3']);
  });

  it('chat.completions at temperature 0: the reference greedy tokens, exact usage', async () => {
    const messages = [{ role: 'user' as const, content: 'hello world' }];
    const { tokens: prompt } = (await fetch(`${cli.base}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny-qwen3', messages }) }).then((r) => r.json())) as { tokens: number[] };
    const vocab = tinyVocab();
    // The ChatML turn as the GGUF's template writes it, with <|im_start|> parsed as one special token.
    expect(prompt[0]).toBe(vocab.tokens.indexOf('<|im_start|>'));
    const want = reference(prompt);
    const res = await client.chat.completions.create({ model: 'tiny-qwen3', messages, temperature: 0, max_tokens: MAX_TOKENS, logprobs: true });
    const got = res.choices[0]!.logprobs!.content!;
    const texts = await Promise.all(want.tokens.map(async (id) => (await fetch(`${cli.base}/detokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny-qwen3', tokens: [id] }) }).then((r) => r.json()) as { prompt: string }).prompt));
    expect(got.map((t) => t.token)).toEqual(texts);
    got.forEach((t, i) => expect(t.logprob).toBeCloseTo(want.logprobs[i]!, LOGPROB_DIGITS));
    expect(res.usage).toEqual(expect.objectContaining({ prompt_tokens: prompt.length, completion_tokens: want.tokens.length, total_tokens: prompt.length + want.tokens.length }));
  }, 120_000);
});
