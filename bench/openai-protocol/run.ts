import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generationText } from '../../src/generation/generation-text.js';
import type { SamplingParams } from '../../src/generation/text-generator.js';
import { fakeServedGenerator, qwen3Tokenizer } from '../../test/helpers/fake-generator.js';
import { generationApp } from '../../test/helpers/generation-app.js';

/**
 * What the OpenAI protocol layer costs per generated token, with no model: a scripted generator
 * (test/helpers/fake-generator.ts, one token per event-loop turn) read (1) in process through the
 * detokenizer and stop-string check alone, and (2) through POST /v1/chat/completions with
 * `stream: true` over loopback (chat template, tokenization, SSE chunks, logprobs off), at 1 and 16
 * concurrent requests of TOKENS tokens each. The ratio is the protocol's share of a token's time;
 * a real model's step (tens of ms on CPU) dwarfs both.
 */
const TOKENS = Number(process.env.BENCH_TOKENS ?? 512);
const SAMPLING: SamplingParams = { temperature: 0, topP: 1, topK: 0, minP: 0, presencePenalty: 0, frequencyPenalty: 0, repetitionPenalty: 1, maxTokens: TOKENS, minTokens: 0, stopTokenIds: [], ignoreEos: true };

const tokenizer = await qwen3Tokenizer();
const words = await tokenizer.encode(' the quick brown fox jumps over the lazy dog', false);
const bench = await fakeServedGenerator(() => words);
const app = await generationApp([bench]);
await app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1/chat/completions`;

async function inProcess(concurrency: number): Promise<number> {
  const start = performance.now();
  let tokens = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, i) => {
      const generation = bench.generator.generate({ requestId: `b${i}`, promptTokenIds: [1], sampling: SAMPLING });
      for await (const piece of generationText(generation, bench.tokenizer, { promptTokenIds: [1], stop: ['never'], includeStopString: false, skipSpecialTokens: true, minTokens: 0 })) tokens += piece.tokens.length;
    }),
  );
  return tokens / ((performance.now() - start) / 1000);
}

/** One streamed chat request through node:http (undici's fetch costs more per SSE event than the server does). */
function streamedChat(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(JSON.parse(body.split('\n\n').filter((e) => e.startsWith('data: {')).at(-1)!.slice(6)).usage.completion_tokens));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ messages: [{ role: 'user', content: 'Go' }], stream: true, stream_options: { include_usage: true }, max_tokens: TOKENS, ignore_eos: true, stop: ['never'], chat_template_kwargs: { enable_thinking: false } }));
  });
}

async function overHttp(concurrency: number): Promise<number> {
  const start = performance.now();
  const tokens = (await Promise.all(Array.from({ length: concurrency }, () => streamedChat()))).reduce((a, b) => a + b, 0);
  return tokens / ((performance.now() - start) / 1000);
}

console.log(`tokens per request: ${TOKENS}; figures in tokens/s (all requests together)`);
console.log('concurrency | in process (detokenize + stop strings) | /v1/chat/completions stream | ratio');
for (const c of [1, 16]) {
  await Promise.all([inProcess(c), overHttp(c)]); // warm-up
  const a = await inProcess(c);
  const b = await overHttp(c);
  console.log(`${c} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(b / a).toFixed(2)}`);
}
await app.close();
