import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { systemClock } from '../../src/engine/clock.js';
import { InThreadTarget } from '../../src/generation/in-thread-target.js';
import { IterationScheduler } from '../../src/generation/iteration-scheduler.js';
import type { GenerationChunk } from '../../src/generation/text-generator.js';
import { ClassDecoderRuntime } from '../../src/instance/class-decoder-runtime.js';
import { MODEL_FOLDER, Qwen3Decoder } from '../../examples/class-generator/index.js';
import { writeDecoderFolder, type DecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { referenceGreedy } from '../helpers/decoder-reference.js';
import { greedy } from '../helpers/fake-decoder.js';

/**
 * The README's generator class driven in this thread by the scheduler, through the same
 * ClassDecoderRuntime its instance host uses: its own KV cache must survive chunked prefill and a
 * preemption (the scheduler recomputes from `cachedLength: 0`) and still give the float64
 * reference's greedy tokens.
 */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-class-steps-'));
let folder: DecoderFolder;
let decoder: Qwen3Decoder;

beforeAll(async () => {
  folder = writeDecoderFolder(join(root, MODEL_FOLDER));
  decoder = new Qwen3Decoder();
  const ctx = { loadModel: (path: string) => new OnnxBackend().load(join(root, path), { options: { intraOpNumThreads: 1 } }) } as unknown as Parameters<Qwen3Decoder['initialize']>[0];
  await decoder.initialize(ctx);
});
afterAll(async () => {
  await decoder?.finalize();
  rmSync(root, { recursive: true, force: true });
});

describe('the example step hook under the iteration scheduler', () => {
  it('chunks prompts, is preempted under a tiny KV pool, and still generates the reference greedy tokens; every cache is released', async () => {
    const scheduler = new IterationScheduler('qwen3-class', { maxNumSeqs: 4, maxNumBatchedTokens: 6, kvBlocks: 3 }, { eosTokenIds: [], maxModelLen: 256 }, new InThreadTarget(new ClassDecoderRuntime(decoder, 'Qwen3Decoder')), systemClock);
    const prompts = [[5, 6, 7, 8, 9, 10, 11, 12, 13, 14], [40, 41], [100, 90, 80, 70, 60], [3]];
    const tokens = await Promise.all(prompts.map(async (prompt, i) => {
      const sequence = scheduler.sequence({ requestId: String(i), promptTokenIds: prompt, sampling: greedy(12, { ignoreEos: true }) });
      void scheduler.submit(sequence, {});
      const out: GenerationChunk[] = [];
      for await (const chunk of sequence) out.push(chunk);
      return out.flatMap((c) => c.tokens.map((t) => t.tokenId));
    }));
    expect(scheduler.preemptions).toBeGreaterThan(0);
    tokens.forEach((t, i) => expect(t).toEqual(referenceGreedy(folder.weights, prompts[i]!, 12)));
    await expect.poll(() => decoder.cache().sequences).toEqual([]);
  });

  it('cuts a held cache back to cachedLength before appending: logits equal a fresh sequence over the same tokens', async () => {
    await decoder.step([{ sequenceId: 101, cachedLength: 0, tokenIds: [5, 6, 7, 8], logits: 'none' }]);
    const { rows: [cut] } = await decoder.step([{ sequenceId: 101, cachedLength: 2, tokenIds: [9], logits: 'last' }]);
    const { rows: [fresh] } = await decoder.step([{ sequenceId: 102, cachedLength: 0, tokenIds: [5, 6, 9], logits: 'last' }]);
    expect(decoder.cache().tokens).toBe(6);
    decoder.release([101, 102]);
    expect(cut!.length).toBe(folder.weights.shape.vocab);
    cut!.forEach((v, i) => expect(v).toBeCloseTo(fresh![i]!, 4));
  });
});
