import { createError } from '../errors/index.js';
import type { Clock } from '../engine/clock.js';
import type { Scheduler } from '../engine/scheduler.js';
import type { SubmitOptions } from '../engine/dynamic-batcher.js';
import type { DecoderCallRow, DecoderRowResult, DecoderStepCall } from '../wire/decoder-step-call.js';
import { GenerationSequence } from './generation-stream.js';
import { KvBlocks } from './kv-blocks.js';
import { blockHashes, PrefixCache } from './prefix-cache.js';
import type { FinishReason, GeneratedToken, GenerationRequest } from './text-generator.js';

/**
 * The iteration-level (continuous batching) scheduler of a generator, as vLLM's v1 scheduler runs
 * (vllm/v1/core/sched/scheduler.py; docs/configuration/optimization.md): one running set per
 * instance; each step first gives every running sequence that is decoding its next token, then
 * fills what is left of `max_num_batched_tokens` with prefill chunks (chunked prefill), running
 * ones first, then waiting requests first come first served, up to `max_num_seqs` sequences.
 * Requests join and leave between steps. KV memory is counted in 16-token blocks; when a running
 * sequence needs a block and none is free, the newest running sequence is preempted (vLLM's
 * RECOMPUTE): its blocks are freed, it goes back to the front of the queue and later recomputes
 * its prompt and the tokens it generated. A cancelled or stopped sequence leaves before the next step.
 */

export interface IterationLimits {
  /** vLLM's --max-num-seqs: sequences in one step. */
  readonly maxNumSeqs: number;
  /** vLLM's --max-num-batched-tokens: tokens in one step (decodes count one each). */
  readonly maxNumBatchedTokens: number;
  /** KV blocks of BLOCK_SIZE tokens per instance. */
  readonly kvBlocks: number;
  /** Reuse cached prefixes (prefix-cache.ts); only for a runtime with `copyPrefix`. */
  readonly prefixCaching?: boolean;
}

/** Where steps run: an engine's instances (generator-engine.ts) or, in tests, a runtime in this thread. */
export interface StepTarget {
  readonly instanceCount: number;
  /** Takes instance `index` if it is idle; the step's run frees it. */
  tryAcquire(index: number): unknown;
  /**
   * Runs `call` on the acquired instance; `admitted` are the requests dispatched for the first time
   * in it. Resolves each row's result, or an Error where the instance failed it.
   */
  run(acquired: unknown, call: DecoderStepCall, admitted: readonly GenerationSequence[]): Promise<readonly (DecoderRowResult | Error)[]>;
}

/** What the scheduler tells its metrics (vLLM's names, generation-metrics.ts). */
export interface IterationEvents {
  scheduled?(sequence: GenerationSequence, queueSeconds: number): void;
  token?(sequence: GenerationSequence, sinceLastSeconds: number, first: boolean): void;
  preempted?(sequence: GenerationSequence): void;
  finished?(sequence: GenerationSequence, reason: FinishReason): void;
  failed?(sequence: GenerationSequence, error: Error): void;
}

/** One instance's running set and KV blocks. */
class InstanceLoop {
  readonly running: GenerationSequence[] = [];
  readonly blocks: KvBlocks;
  /** Sequences whose caches the instance drops at the start of its next step. */
  release: number[] = [];
  stepping = false;
  readonly prefix = new PrefixCache();
  /** Donors this step copies from: not evicted before the step runs. */
  readonly copying = new Set<number>();

  constructor(
    readonly index: number,
    kvBlocks: number,
  ) {
    this.blocks = new KvBlocks(kvBlocks);
  }
}

interface PlannedRow {
  readonly sequence: GenerationSequence;
  readonly row: DecoderCallRow;
}

export class IterationScheduler implements Scheduler {
  private readonly waiting: GenerationSequence[] = [];
  private readonly loops: InstanceLoop[];
  private readonly homes = new Map<GenerationSequence, InstanceLoop>();
  private nextId = 1;
  private draining?: () => void;
  private drained?: Promise<void>;
  /** Preemptions since start (vllm:num_preemptions_total). */
  preemptions = 0;

  constructor(
    readonly owner: string,
    private readonly limits: IterationLimits,
    private readonly model: { readonly eosTokenIds: readonly number[]; readonly maxModelLen: number },
    private readonly target: StepTarget,
    private readonly clock: Clock,
    private readonly events: IterationEvents = {},
  ) {
    if (limits.maxNumBatchedTokens < limits.maxNumSeqs) throw new Error(`max_num_batched_tokens (${limits.maxNumBatchedTokens}) must be at least max_num_seqs (${limits.maxNumSeqs})`);
    this.loops = Array.from({ length: target.instanceCount }, (_, i) => new InstanceLoop(i, limits.kvBlocks));
  }

  get pendingCount(): number {
    return this.waiting.length;
  }

  get inflightCount(): number {
    return this.loops.reduce((sum, loop) => sum + loop.running.length, 0);
  }

  /** Blocks in use over all instances, 0..1; a cached prefix's blocks count as free, as vLLM counts them. */
  get kvUsage(): number {
    return this.loops.reduce((sum, loop) => {
      let cached = 0;
      for (const donor of loop.prefix.donorIds) cached += loop.blocks.blocksOf(donor);
      return sum + loop.blocks.usage - cached / loop.blocks.total;
    }, 0) / this.loops.length;
  }

  /** A new sequence for `request`; queue it with `submit` (through InstanceEngine.submit, which counts it). */
  sequence(request: GenerationRequest): GenerationSequence {
    return new GenerationSequence(this.nextId++, request, this.clock.now(), (s) => this.ending(s));
  }

  submit(sequence: GenerationSequence, _options: SubmitOptions): Promise<FinishReason> {
    if (this.draining) throw createError('SF_ERR_DRAINING');
    if (sequence.ending) this.finish(sequence, sequence.ending);
    else {
      this.waiting.push(sequence);
      this.notifyIdle();
    }
    return sequence.done;
  }

  notifyIdle(): void {
    for (const loop of this.loops) {
      if (loop.stepping || (loop.running.length === 0 && this.waiting.length === 0 && loop.release.length === 0)) continue;
      const acquired = this.target.tryAcquire(loop.index);
      if (acquired === undefined) continue;
      loop.stepping = true;
      void this.step(loop, acquired);
    }
  }

  /** The instance died: its caches are gone, so its running sequences go back to the front of the queue to recompute. */
  instanceDown(index: number): void {
    const loop = this.loops[index];
    if (loop && !loop.stepping) this.resetLoop(loop);
  }

  private resetLoop(loop: InstanceLoop): void {
    for (const sequence of [...loop.running].reverse()) {
      this.preempt(loop, sequence, false);
    }
    for (const donor of [...loop.prefix.donorIds]) {
      loop.prefix.remove(donor);
      loop.blocks.release(donor);
    }
    loop.release = [];
  }

  rejectQueued(error: Error): void {
    for (const sequence of this.waiting.splice(0)) this.fail(sequence, error);
    this.checkDrained();
  }

  drain(): Promise<void> {
    this.drained ??= new Promise<void>((resolve) => (this.draining = resolve));
    this.checkDrained();
    return this.drained;
  }

  private checkDrained(): void {
    if (this.draining && this.waiting.length === 0 && this.loops.every((loop) => loop.running.length === 0 && !loop.stepping)) this.draining();
  }

  /** stop() or an abort: a waiting sequence ends now; a running one between steps (now, when its instance is not stepping). */
  private ending(sequence: GenerationSequence): void {
    const at = this.waiting.indexOf(sequence);
    if (at >= 0) {
      this.waiting.splice(at, 1);
      this.finish(sequence, sequence.ending!);
      return;
    }
    const loop = this.homes.get(sequence);
    if (loop && !loop.stepping) this.finish(sequence, sequence.ending!);
    this.notifyIdle();
  }

  private async step(loop: InstanceLoop, acquired: unknown): Promise<void> {
    try {
      await this.runStep(loop, acquired);
    } finally {
      // Synchronously after the results are applied: the next step goes to the instance before the
      // readers of this step's tokens run, so their detokenizing and writes overlap the instance's
      // work instead of sitting between steps (vLLM's async scheduling overlaps the same way).
      loop.stepping = false;
      this.checkDrained();
      this.notifyIdle();
    }
  }

  private async runStep(loop: InstanceLoop, acquired: unknown): Promise<void> {
    for (const sequence of [...loop.running]) if (sequence.ending) this.finish(sequence, sequence.ending);
    const planned = this.plan(loop);
    const release = loop.release;
    loop.release = [];
    const admitted = planned.filter((p) => p.sequence.dispatchedMs === undefined).map((p) => p.sequence);
    let results: readonly DecoderRowResult[];
    try {
      const answered = await this.target.run(acquired, { kind: 'decoder-step', release, rows: planned.map((p) => p.row) }, admitted);
      const failed = answered.find((result) => result instanceof Error);
      if (failed) throw failed;
      results = answered as readonly DecoderRowResult[];
    } catch (err) {
      // The sequences of the failed step fail (Triton fails a crashed batch's requests); the others recompute.
      const error = createError('SF_ERR_DECODER_STEP_FAILED', this.owner, { cause: err });
      for (const { sequence } of planned) this.fail(sequence, error);
      this.resetLoop(loop);
      return;
    }
    const now = this.clock.now();
    planned.forEach(({ sequence, row }, i) => this.apply(sequence, row, results[i] ?? {}, now));
  }

  /** This step's rows: decodes first, then prefill chunks within the token budget. */
  private plan(loop: InstanceLoop): PlannedRow[] {
    const { maxNumSeqs, maxNumBatchedTokens } = this.limits;
    let budget = maxNumBatchedTokens;
    loop.copying.clear();
    const rows: PlannedRow[] = [];
    const inStep = new Set<GenerationSequence>();
    const add = (sequence: GenerationSequence, count: number): void => {
      rows.push({ sequence, row: this.row(sequence, count) });
      inStep.add(sequence);
      budget -= count;
    };
    for (const sequence of [...loop.running]) {
      if (budget === 0) break;
      if (!loop.running.includes(sequence) || sequence.length - sequence.computed !== 1) continue;
      if (this.makeRoom(loop, sequence, sequence.length, inStep)) add(sequence, 1);
    }
    for (const sequence of [...loop.running]) {
      if (budget === 0) break;
      const remaining = sequence.length - sequence.computed;
      if (!loop.running.includes(sequence) || remaining <= 1) continue;
      const count = this.fit(loop, sequence, Math.min(remaining, budget), inStep);
      if (count > 0) add(sequence, count);
    }
    while (budget > 0 && this.waiting.length > 0 && loop.running.length < maxNumSeqs) {
      const sequence = this.waiting[0]!;
      this.prefixHit(loop, sequence);
      const room = (): number => loop.blocks.freeBlocks * loop.blocks.blockSize - sequence.computed;
      while (room() < 1 && this.evictDonor(loop));
      const count = Math.min(sequence.length - sequence.computed, budget, room());
      if (count <= 0) {
        this.undoHit(loop, sequence);
        break;
      }
      this.waiting.shift();
      loop.running.push(sequence);
      this.homes.set(sequence, loop);
      loop.blocks.grow(sequence.id, sequence.computed + count);
      if (sequence.firstScheduledUs === undefined) {
        sequence.firstScheduledUs = this.clock.now();
        this.events.scheduled?.(sequence, (sequence.firstScheduledUs - sequence.arrivalUs) / 1e6);
      }
      add(sequence, count);
    }
    return rows;
  }

  /** A waiting sequence's longest cached prefix (never its last token, which must run to be sampled from). */
  private prefixHit(loop: InstanceLoop, sequence: GenerationSequence): void {
    if (!this.limits.prefixCaching || sequence.computed > 0 || sequence.promptLogprobsPending) return;
    const hit = loop.prefix.lookup(blockHashes((i) => sequence.tokenAt(i), sequence.length - 1, loop.blocks.blockSize));
    if (!hit) return;
    sequence.computed = hit.blocks * loop.blocks.blockSize;
    sequence.copyFrom = hit.donor;
    loop.copying.add(hit.donor);
  }

  private undoHit(loop: InstanceLoop, sequence: GenerationSequence): void {
    if (sequence.copyFrom === undefined) return;
    loop.copying.delete(sequence.copyFrom);
    sequence.copyFrom = undefined;
    sequence.computed = 0;
  }

  /** Frees the least recently used cached prefix not copied this step; false when there is none. */
  private evictDonor(loop: InstanceLoop): boolean {
    const donor = loop.prefix.oldest(loop.copying);
    if (donor === undefined) return false;
    loop.prefix.remove(donor);
    loop.blocks.release(donor);
    loop.release.push(donor);
    return true;
  }

  /** Makes the blocks for `sequence` to hold `tokens`, preempting the newest running sequences not in this step; false when it preempted `sequence` itself. */
  private makeRoom(loop: InstanceLoop, sequence: GenerationSequence, tokens: number, inStep: ReadonlySet<GenerationSequence>): boolean {
    while (!loop.blocks.grow(sequence.id, tokens)) {
      if (this.evictDonor(loop)) continue;
      const victim = [...loop.running].reverse().find((s) => !inStep.has(s));
      if (!victim) return false;
      this.preempt(loop, victim);
      if (victim === sequence) return false;
    }
    return true;
  }

  /** How much of a running prefill fits: what the free blocks hold, preempting newer sequences only when nothing fits. */
  private fit(loop: InstanceLoop, sequence: GenerationSequence, wanted: number, inStep: ReadonlySet<GenerationSequence>): number {
    const room = (loop.blocks.blocksOf(sequence.id) + loop.blocks.freeBlocks) * loop.blocks.blockSize - sequence.computed;
    const count = Math.min(wanted, room);
    if (count > 0) {
      loop.blocks.grow(sequence.id, sequence.computed + count);
      return count;
    }
    if (this.evictDonor(loop)) return this.fit(loop, sequence, wanted, inStep);
    return this.makeRoom(loop, sequence, sequence.computed + 1, inStep) ? this.fit(loop, sequence, wanted, inStep) : 0;
  }

  private preempt(loop: InstanceLoop, sequence: GenerationSequence, counted = true): void {
    loop.running.splice(loop.running.indexOf(sequence), 1);
    this.homes.delete(sequence);
    loop.blocks.release(sequence.id);
    loop.release.push(sequence.id);
    sequence.computed = 0;
    sequence.started = false;
    sequence.copyFrom = undefined;
    this.waiting.unshift(sequence);
    if (!counted) return;
    this.preemptions++;
    this.events.preempted?.(sequence);
  }

  private row(sequence: GenerationSequence, count: number): DecoderCallRow {
    const { request } = sequence;
    const { sampling } = request;
    const tokenIds = Array.from({ length: count }, (_, k) => sequence.tokenAt(sequence.computed + k));
    const sample = sequence.computed + count === sequence.length;
    const promptChunk = sequence.computed < request.promptTokenIds.length;
    const logits = sequence.promptLogprobsPending && promptChunk ? 'all' : sample ? 'last' : 'none';
    const stopTokenIds = [...(sampling.ignoreEos ? [] : this.model.eosTokenIds), ...sampling.stopTokenIds];
    return {
      sequenceId: sequence.id,
      cachedLength: sequence.computed,
      tokenIds,
      logits,
      sample,
      ...(sequence.started ? {} : { start: { sampling, promptLength: request.promptTokenIds.length, stopTokenIds, ...(request.structuredOutput ? { structuredOutput: request.structuredOutput } : {}) } }),
      ...(sequence.copyFrom === undefined ? {} : { copyFrom: sequence.copyFrom }),
    };
  }

  private apply(sequence: GenerationSequence, row: DecoderCallRow, result: DecoderRowResult, nowUs: number): void {
    sequence.started = true;
    sequence.copyFrom = undefined;
    sequence.computed += row.tokenIds.length;
    if (result.promptLogprobs && sequence.promptLogprobsPending) {
      sequence.promptLogprobs.push(...result.promptLogprobs.slice(0, sequence.request.promptTokenIds.length - sequence.promptLogprobs.length));
      if (sequence.promptLogprobs.length >= sequence.request.promptTokenIds.length) sequence.promptLogprobsPending = false;
    }
    // A sequence stopped or aborted while its step ran ends at the next step's start; its last token is not read.
    if (!result.token || sequence.finished || sequence.ending) return;
    const token: GeneratedToken = result.token;
    const first = sequence.output.length === 0;
    sequence.output.push(token);
    this.events.token?.(sequence, (nowUs - (sequence.lastTokenUs ?? sequence.arrivalUs)) / 1e6, first);
    sequence.lastTokenUs = nowUs;
    const reason = this.stopReason(sequence, token.tokenId, result.grammar);
    const chunk = {
      tokens: [token],
      ...(first && sequence.request.sampling.promptLogprobs !== undefined ? { promptLogprobs: sequence.promptLogprobs } : {}),
    };
    if (reason) this.finish(sequence, reason.finishReason, chunk, reason.stopTokenId);
    else sequence.push(chunk);
  }

  /** vLLM's check_stop: an end-of-sequence or stop token, the grammar's end (as the instance's matcher reported it), then max_tokens or the context. */
  private stopReason(sequence: GenerationSequence, tokenId: number, grammar: DecoderRowResult['grammar']): { finishReason: FinishReason; stopTokenId?: number } | undefined {
    const { sampling } = sequence.request;
    if (grammar === 'rejected') return { finishReason: 'stop' };
    if (sequence.output.length >= sampling.minTokens) {
      if (!sampling.ignoreEos && this.model.eosTokenIds.includes(tokenId)) return { finishReason: 'stop', stopTokenId: tokenId };
      if (sampling.stopTokenIds.includes(tokenId)) return { finishReason: 'stop', stopTokenId: tokenId };
    }
    if (grammar === 'ended') return { finishReason: 'stop' };
    if (sequence.output.length >= sampling.maxTokens || sequence.length >= this.model.maxModelLen) return { finishReason: 'length' };
    return undefined;
  }

  /** Takes a sequence out of its running set; with `cache`, its full blocks stay as a cached prefix. */
  private leave(sequence: GenerationSequence, cache = false): void {
    const loop = this.homes.get(sequence);
    if (!loop) return;
    this.homes.delete(sequence);
    loop.running.splice(loop.running.indexOf(sequence), 1);
    const hashes = cache && this.limits.prefixCaching ? blockHashes((i) => sequence.tokenAt(i), sequence.computed, loop.blocks.blockSize) : [];
    if (hashes.length > 0) {
      loop.prefix.add(sequence.id, hashes);
      return;
    }
    loop.blocks.release(sequence.id);
    loop.release.push(sequence.id);
  }

  private finish(sequence: GenerationSequence, reason: FinishReason, chunk: { tokens: readonly GeneratedToken[] } = { tokens: [] }, stopTokenId?: number): void {
    if (sequence.finished) return;
    sequence.finishedUs = this.clock.now();
    this.leave(sequence, true);
    sequence.push({ ...chunk, finishReason: reason, ...(stopTokenId === undefined ? {} : { stopTokenId }) });
    this.events.finished?.(sequence, reason);
    this.checkDrained();
  }

  private fail(sequence: GenerationSequence, error: Error): void {
    this.leave(sequence);
    sequence.fail(error);
    this.events.failed?.(sequence, error);
  }
}
