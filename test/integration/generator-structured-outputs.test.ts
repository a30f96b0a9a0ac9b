import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerationChunk, ServedGenerator } from '../../src/generation/text-generator.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { writeDecoderFolder, type DecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { greedy } from '../helpers/fake-decoder.js';

/**
 * Structured outputs over a Qwen3-sized vocabulary (Qwen3's 151k merges, logits padded as Qwen3's
 * are) served from a folder: xgrammar's TokenizerInfo, the compile and every step's mask run in the
 * generator's worker instance, so the HTTP thread's event loop keeps turning. The old path built
 * the TokenizerInfo on the HTTP thread: 2.7–3.4 s on this machine (docs/BENCHMARKS.md), then
 * 4–10 ms a step.
 */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-grammar-'));
let folder: DecoderFolder;
let server: ServeFnServer;
let served: ServedGenerator;

beforeAll(async () => {
  folder = writeDecoderFolder(join(root, 'qwen3-big-vocab'), { merges: 151_000 });
  server = new ServeFnServer({ models: [], generativeFolders: [folder.dir], collectProcessMetrics: false });
  await server.start();
  served = server.generators[0]!;
}, 120_000);
afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

/** The longest the event loop went without running a 5 ms timer while `work` ran. */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return longest;
}

describe('structured outputs over a 151k vocabulary', () => {
  it('the HTTP thread never stalls on xgrammar, and the answers validate', async () => {
    expect(served.generator.vocabSize).toBeGreaterThan(150_000);
    const schema = { type: 'object', properties: { city: { enum: ['Paris', 'Lyon', 'Nice'] }, capital: { type: 'boolean' } }, required: ['city', 'capital'], additionalProperties: false };
    const answers: string[] = [];
    const stall = await longestStall(() =>
      Promise.all([[5, 9, 200], [7, 8]].map(async (prompt) => {
        const ids: number[] = [];
        for await (const chunk of served.generator.generate({ requestId: String(prompt), promptTokenIds: prompt, sampling: greedy(64), structuredOutput: { kind: 'json', schema } }) as AsyncIterable<GenerationChunk>) {
          ids.push(...chunk.tokens.map((t) => t.tokenId));
        }
        answers.push(await served.tokenizer.decode(ids, true));
      })),
    );
    const validate = new Ajv().compile(schema);
    for (const answer of answers) expect(validate(JSON.parse(answer)), answer).toBe(true);
    // Far above a loaded machine's timer noise, far below the 2.7 s TokenizerInfo the HTTP thread used to build.
    expect(stall, `the longest stall: ${stall.toFixed(0)} ms`).toBeLessThan(1_000);
  }, 120_000);
});
