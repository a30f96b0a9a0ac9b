import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/engine/clock.js';
import { InThreadTarget } from '../../src/generation/in-thread-target.js';
import { IterationScheduler, type IterationLimits } from '../../src/generation/iteration-scheduler.js';
import type { GenerationSequence } from '../../src/generation/generation-stream.js';
import type { FinishReason, GenerationChunk } from '../../src/generation/text-generator.js';
import { seededRandom } from '../fixtures/text/text-model-weights.js';
import { vocabularyFromGguf } from '../../src/instance/constraint-vocabulary.js';
import type { DecoderRuntime, DecoderStepResult, DecoderStepRow } from '../../src/spec/decoder-step.js';
import { FAKE_EOS, FakeDecoder, fakeAlone, greedy } from '../helpers/fake-decoder.js';
import { byteLevelAlphabet, tinyVocab } from '../helpers/tiny-decoder.js';

function setup(limits: IterationLimits, maxModelLen = 4096) {
  const runtime = new FakeDecoder();
  const target = new InThreadTarget(runtime, true);
  const scheduler = new IterationScheduler('fake', limits, { eosTokenIds: [FAKE_EOS], maxModelLen }, target, systemClock);
  const start = (prompt: number[], maxTokens: number, signal?: AbortSignal): { sequence: GenerationSequence; chunks: Promise<GenerationChunk[]> } => {
    const sequence = scheduler.sequence({ requestId: String(prompt), promptTokenIds: prompt, sampling: greedy(maxTokens), signal });
    void scheduler.submit(sequence, {});
    const chunks = (async () => {
      const out: GenerationChunk[] = [];
      for await (const chunk of sequence) out.push(chunk);
      return out;
    })();
    return { sequence, chunks };
  };
  return { runtime, target, scheduler, start };
}

const tokensOf = (chunks: readonly GenerationChunk[]): number[] => chunks.flatMap((c) => c.tokens.map((t) => t.tokenId));
const finishOf = (chunks: readonly GenerationChunk[]): FinishReason | undefined => chunks.at(-1)?.finishReason;

function workload(seed: number, count: number): { prompt: number[]; maxTokens: number }[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, (_, i) => ({
    prompt: Array.from({ length: 1 + Math.floor(random() * 40) }, () => 2 + Math.floor(random() * 60)).concat([i + 2]),
    maxTokens: 1 + Math.floor(random() * 20),
  }));
}

describe('IterationScheduler (fake decoder)', () => {
  for (const [name, limits] of [
    ['roomy', { maxNumSeqs: 4, maxNumBatchedTokens: 32, kvBlocks: 64 }],
    ['tiny KV pool', { maxNumSeqs: 6, maxNumBatchedTokens: 24, kvBlocks: 5 }],
  ] as const) {
    it(`${name}: every request completes with what it generates alone, within max_num_seqs and the token budget, decodes never starved`, async () => {
      for (const seed of [1, 2, 3]) {
        const { scheduler, target, runtime, start } = setup(limits);
        const jobs = workload(seed, 12).filter((j) => j.prompt.length + j.maxTokens <= limits.kvBlocks * 16);
        const started = jobs.map((j) => start(j.prompt, j.maxTokens));
        const results = await Promise.all(started.map((s) => s.chunks));
        results.forEach((chunks, i) => {
          expect(tokensOf(chunks)).toEqual(fakeAlone(jobs[i]!.prompt, jobs[i]!.maxTokens));
          expect(finishOf(chunks)).toBe('length');
        });
        const decoding = new Set<number>();
        for (const call of target.calls) {
          expect(call.rows.length).toBeLessThanOrEqual(limits.maxNumSeqs);
          expect(call.rows.reduce((sum, r) => sum + r.tokenIds.length, 0)).toBeLessThanOrEqual(limits.maxNumBatchedTokens);
          // A sequence that sampled last step runs again this step, unless it left (finished or preempted).
          const here = new Set(call.rows.map((r) => r.sequenceId));
          for (const id of decoding) if (!call.release.includes(id)) expect(here.has(id)).toBe(true);
          decoding.clear();
          for (const row of call.rows) if (row.sample) decoding.add(row.sequenceId);
        }
        await scheduler.drain();
        await new Promise((resolve) => setTimeout(resolve, 10));
        expect(scheduler.kvUsage).toBe(0);
        expect(runtime.caches.size).toBe(0);
        if (name === 'tiny KV pool') expect(scheduler.preemptions).toBeGreaterThan(0);
        else expect(scheduler.preemptions).toBe(0);
      }
    });
  }

  it('admits waiting requests first come, first served', async () => {
    const { target, start } = setup({ maxNumSeqs: 2, maxNumBatchedTokens: 8, kvBlocks: 64 });
    const jobs = Array.from({ length: 6 }, (_, i) => start([10 + i, 20, 30], 3));
    await Promise.all(jobs.map((j) => j.chunks));
    const firstSeen: number[] = [];
    for (const call of target.calls) for (const row of call.rows) if (!firstSeen.includes(row.sequenceId)) firstSeen.push(row.sequenceId);
    expect(firstSeen).toEqual(jobs.map((j) => j.sequence.id));
  });

  it('a client abort ends the sequence with abort and frees its blocks and cache; stop() ends it with stop', async () => {
    const { scheduler, runtime, start } = setup({ maxNumSeqs: 4, maxNumBatchedTokens: 16, kvBlocks: 16 });
    const controller = new AbortController();
    const aborted = start([5, 6, 7], 1000, controller.signal);
    const stopped = start([8, 9], 1000);
    const other = start([3, 4], 5);
    const seen: GenerationChunk[] = [];
    for await (const chunk of stopped.sequence) {
      seen.push(chunk);
      if (seen.length === 3) {
        controller.abort();
        stopped.sequence.stop();
      }
    }
    expect(finishOf(seen)).toBe('stop');
    expect(finishOf(await aborted.chunks)).toBe('abort');
    expect(tokensOf(await other.chunks)).toEqual(fakeAlone([3, 4], 5));
    await scheduler.drain();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(scheduler.kvUsage).toBe(0);
    expect(runtime.caches.has(aborted.sequence.id)).toBe(false);
  });

  it("sends the next step before the step's tokens reach their readers; a sequence stopped meanwhile gets no token after the stop", async () => {
    const { scheduler, target, start } = setup({ maxNumSeqs: 4, maxNumBatchedTokens: 16, kvBlocks: 16 });
    const log: string[] = [];
    const run = target.run.bind(target);
    target.run = (acquired, call) => {
      log.push(`step ${target.calls.length + 1}`);
      return run(acquired, call);
    };
    const { sequence } = start([5, 6, 7], 1000);
    const seen: GenerationChunk[] = [];
    for await (const chunk of sequence) {
      log.push(`read ${seen.length + 1}`);
      seen.push(chunk);
      if (seen.length === 3) sequence.stop();
    }
    // Step n + 1 is on its way when the reader sees token n.
    expect(log.slice(0, 4)).toEqual(['step 1', 'step 2', 'read 1', 'step 3']);
    expect(tokensOf(seen)).toEqual(fakeAlone([5, 6, 7], 3));
    expect(finishOf(seen)).toBe('stop');
    await scheduler.drain();
    expect(scheduler.kvUsage).toBe(0);
  });

  it('an end-of-sequence token stops with its id; ignore_eos and min_tokens keep going', async () => {
    const runtime = new FakeDecoder();
    const target = new InThreadTarget(runtime);
    // The fake's first token after [2] is the model's only eos here.
    const eos = fakeAlone([2], 1)[0]!;
    const scheduler = new IterationScheduler('fake', { maxNumSeqs: 2, maxNumBatchedTokens: 8, kvBlocks: 8 }, { eosTokenIds: [eos], maxModelLen: 64 }, target, systemClock);
    const run = async (sampling: ReturnType<typeof greedy>): Promise<GenerationChunk[]> => {
      const sequence = scheduler.sequence({ requestId: 'r', promptTokenIds: [2], sampling });
      void scheduler.submit(sequence, {});
      const out: GenerationChunk[] = [];
      for await (const chunk of sequence) out.push(chunk);
      return out;
    };
    const stopped = await run(greedy(5));
    expect(tokensOf(stopped)).toEqual([eos]);
    expect(stopped.at(-1)).toMatchObject({ finishReason: 'stop', stopTokenId: eos });
    expect(tokensOf(await run(greedy(3, { ignoreEos: true })))).toHaveLength(3);
  });

  it('stops at the context length with length', async () => {
    const { start } = setup({ maxNumSeqs: 2, maxNumBatchedTokens: 8, kvBlocks: 8 }, 6);
    const { chunks } = start([2, 3, 4], 100);
    const out = await chunks;
    expect(tokensOf(out)).toHaveLength(3);
    expect(finishOf(out)).toBe('length');
  });
});

describe('IterationScheduler when a step fails', () => {
  it("fails the failed step's sequences; what waited runs on the restarted instance", async () => {
    const runtime = new FakeDecoder();
    const target = new InThreadTarget(runtime);
    const scheduler = new IterationScheduler('fake', { maxNumSeqs: 4, maxNumBatchedTokens: 4, kvBlocks: 16 }, { eosTokenIds: [FAKE_EOS], maxModelLen: 512 }, target, systemClock);
    const step = runtime.step.bind(runtime);
    let calls = 0;
    runtime.step = async (rows) => {
      // The first step crashes and loses every cache, as a restarted instance has none.
      if (++calls === 1) {
        runtime.caches.clear();
        throw new Error('instance crashed');
      }
      return step(rows);
    };
    const start = (prompt: number[]): Promise<GenerationChunk[] | Error> => {
      const sequence = scheduler.sequence({ requestId: 'r', promptTokenIds: prompt, sampling: greedy(6) });
      void scheduler.submit(sequence, {}).catch(() => undefined);
      return (async () => {
        const out: GenerationChunk[] = [];
        try {
          for await (const chunk of sequence) out.push(chunk);
        } catch (err) {
          return err as Error;
        }
        return out;
      })();
    };
    // A 6-token prompt fills the first step's budget alone; the second request waits, then runs after the crash.
    const results = await Promise.all([start([2, 3, 4, 5, 6, 7]), start([8, 9])]);
    expect(results[0]).toMatchObject({ code: 'SF_ERR_DECODER_STEP_FAILED' });
    expect(tokensOf(results[1] as GenerationChunk[])).toEqual(fakeAlone([8, 9], 6));
  });
});

describe('IterationScheduler prefix caching', () => {
  it('a request sharing full blocks with a finished one copies them, and generates what it would alone, under a tight pool too', async () => {
    for (const kvBlocks of [64, 8]) {
      const runtime = new FakeDecoder();
      const target = new InThreadTarget(runtime, true);
      const scheduler = new IterationScheduler('fake', { maxNumSeqs: 3, maxNumBatchedTokens: 24, kvBlocks, prefixCaching: true }, { eosTokenIds: [FAKE_EOS], maxModelLen: 512 }, target, systemClock);
      const shared = Array.from({ length: 40 }, (_, i) => 2 + ((i * 7) % 50));
      const run = async (prompt: number[]): Promise<number[]> => {
        const sequence = scheduler.sequence({ requestId: 'r', promptTokenIds: prompt, sampling: greedy(5) });
        void scheduler.submit(sequence, {});
        const out: GenerationChunk[] = [];
        for await (const chunk of sequence) out.push(chunk);
        return tokensOf(out);
      };
      expect(await run(shared)).toEqual(fakeAlone(shared, 5));
      const later = [...shared.slice(0, 35), 60, 61];
      const calls = target.calls.length;
      expect(await run(later)).toEqual(fakeAlone(later, 5));
      // Its first row starts past the two full blocks both prompts share, copied from the first request's cache.
      const first = target.calls.slice(calls).flatMap((c) => c.rows).find((r) => r.start)!;
      expect(first).toMatchObject({ cachedLength: 32, copyFrom: expect.any(Number) });
      // Many different prompts then push the cached prefixes out (LRU) rather than fail or preempt needlessly.
      const others = Array.from({ length: 6 }, (_, k) => Array.from({ length: 30 }, (_, i) => 2 + ((i * 3 + k * 11) % 60)));
      const outputs = await Promise.all(others.map(run));
      outputs.forEach((tokens, k) => expect(tokens).toEqual(fakeAlone(others[k]!, 5)));
      await scheduler.drain();
      expect(scheduler.kvUsage).toBe(0);
    }
  });
});

/**
 * Logits that depend only on a sequence's own tokens (a hash of them per vocabulary entry), over
 * the tiny byte-level vocabulary: a recomputed sequence sees exactly the logits it saw before.
 */
class HashedLogits implements DecoderRuntime {
  readonly caches = new Map<number, number[]>();
  constructor(readonly vocabSize: number) {}
  async step(rows: readonly DecoderStepRow[]): Promise<DecoderStepResult> {
    await new Promise((resolve) => setImmediate(resolve));
    return {
      rows: rows.map((row) => {
        const cache = this.caches.get(row.sequenceId) ?? [];
        if (row.cachedLength > cache.length) throw new Error(`sequence ${row.sequenceId}: cachedLength ${row.cachedLength} > ${cache.length}`);
        cache.length = row.cachedLength;
        cache.push(...row.tokenIds);
        this.caches.set(row.sequenceId, cache);
        if (row.logits === 'none') return undefined;
        let h = 17;
        for (const t of cache) h = (Math.imul(h, 31) + t) >>> 0;
        const random = seededRandom(h);
        return Float32Array.from({ length: this.vocabSize }, () => random() * 4);
      }),
    };
  }
  release(ids: readonly number[]): void {
    for (const id of ids) this.caches.delete(id);
  }
}

describe('IterationScheduler with structured outputs (the grammar matchers in the instance)', () => {
  const vocab = tinyVocab();
  const stopIds = [vocab.eosId, vocab.imEndId];
  const byteOf = new Map(byteLevelAlphabet().map((ch, byte) => [ch, byte]));
  const text = (ids: readonly number[]): string => Buffer.from(ids.filter((id) => !stopIds.includes(id)).flatMap((id) => [...vocab.tokens[id]!].map((ch) => byteOf.get(ch)!))).toString('utf8');
  const schema = { type: 'object', properties: { city: { enum: ['Paris', 'Lyon', 'Nice'] }, capital: { type: 'boolean' }, rank: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['city', 'capital', 'rank'], additionalProperties: false };

  async function run(kvBlocks: number, prompts: readonly number[][]) {
    const runtime = new HashedLogits(vocab.tokens.length);
    const target = new InThreadTarget(runtime, true, async () => vocabularyFromGguf(vocab.tokens, 'gpt2', vocab.tokens.length, stopIds));
    const scheduler = new IterationScheduler('grammar', { maxNumSeqs: 8, maxNumBatchedTokens: 64, kvBlocks }, { eosTokenIds: stopIds, maxModelLen: 512 }, target, systemClock);
    const outputs = await Promise.all(prompts.map(async (prompt, i) => {
      const sequence = scheduler.sequence({ requestId: String(i), promptTokenIds: prompt, sampling: greedy(200), structuredOutput: { kind: 'json', schema } });
      void scheduler.submit(sequence, {});
      const chunks: GenerationChunk[] = [];
      for await (const chunk of sequence) chunks.push(chunk);
      return chunks;
    }));
    return { outputs, scheduler, calls: target.calls };
  }

  it('a preempted constrained request recomputes and still answers valid JSON, the same as it answers alone', async () => {
    const prompts = Array.from({ length: 6 }, (_, i) => [3 + i, 40, 41 + i, 7, 9, 11 + i]);
    const alone = await run(256, prompts);
    expect(alone.scheduler.preemptions).toBe(0);
    const crowded = await run(7, prompts);
    expect(crowded.scheduler.preemptions).toBeGreaterThan(0);
    const validate = new Ajv().compile(schema);
    crowded.outputs.forEach((chunks, i) => {
      expect(finishOf(chunks)).toBe('stop');
      const answer: unknown = JSON.parse(text(tokensOf(chunks)));
      expect(validate(answer), JSON.stringify(validate.errors)).toBe(true);
      expect(tokensOf(chunks)).toEqual(tokensOf(alone.outputs[i]!));
    });
  });

  it('sends the spec with a sequence\'s start only, and no vocabulary-wide mask crosses to the instance', async () => {
    const { calls } = await run(7, [[3, 40, 5]]);
    const rows = calls.flatMap((call) => call.rows);
    expect(rows.filter((row) => row.start?.structuredOutput).length).toBe(rows.filter((row) => row.start).length);
    expect(rows.filter((row) => !row.start).every((row) => !('structuredOutput' in row) && Object.values(row).every((v) => !ArrayBuffer.isView(v)))).toBe(true);
  });
});
