import { createError } from '../errors/index.js';
import type { Clock } from './clock.js';

/** Triton's correlation id: a uint64 or a string; 0 and '' mean the request is in no sequence. */
export type CorrelationId = number | string;

/** The sequence parameters of one request (Triton's docs/protocol/extension_sequence.md). */
export interface SequenceParameters {
  readonly id?: CorrelationId;
  readonly start: boolean;
  readonly end: boolean;
}

/** Where one request of a sequence runs and what its model is told; `done` is called once it settled. */
export interface SequenceRoute {
  /** The index of the instance that holds the sequence. */
  readonly lane: number;
  /** Names the sequence: requests with one key run one at a time, in arrival order. */
  readonly key: string;
  readonly correlationId: CorrelationId;
  readonly start: boolean;
  readonly end: boolean;
  done(): void;
}

export interface SequenceRegistryOptions {
  readonly modelName: string;
  /** One lane per model instance. */
  readonly laneCount: number;
  /** `max_sequence_idle_microseconds`. */
  readonly idleUs: number;
  readonly clock: Clock;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
}

interface LiveSequence {
  readonly lane: number;
  /** Requests routed and not yet settled. */
  pending: number;
  idleTimer: unknown;
}

/**
 * The live sequences of one model version and the instance each is bound to (Triton's sequence
 * slots, sequence_batch_scheduler.cc): a sequence gets the instance with the fewest live sequences
 * when it starts and keeps it until its END request, or until it has sat idle, with nothing
 * pending, for max_sequence_idle_microseconds.
 */
export class SequenceRegistry {
  private readonly live = new Map<string, LiveSequence>();
  private readonly loads: number[];
  /** Lanes whose instance is down (crashed, not yet restarted): new sequences go elsewhere. */
  private readonly down = new Set<number>();

  constructor(private readonly options: SequenceRegistryOptions) {
    this.loads = Array.from({ length: options.laneCount }, () => 0);
  }

  /** How many sequences are bound to each instance, by instance index. */
  get liveCounts(): readonly number[] {
    return [...this.loads];
  }

  /** How many live sequences instance `lane` holds. */
  liveOn(lane: number): number {
    return this.loads[lane];
  }

  /** Whether the sequence `key` is live (started, not ended or released). */
  isLive(key: string): boolean {
    return this.live.has(key);
  }

  /**
   * Binds a request to its sequence's instance, in arrival order. Throws a 400 for a request with
   * no correlation id, or one whose sequence is not live and which does not START one.
   */
  route(params: SequenceParameters): SequenceRoute {
    const { modelName, idleUs, clock, log } = this.options;
    const { id } = params;
    if (id === undefined || id === 0 || id === '') throw createError('SF_ERR_SEQUENCE_ID_MISSING', modelName);
    const key = keyOf(id);
    let sequence = this.live.get(key);
    if (!sequence && !params.start) throw createError('SF_ERR_SEQUENCE_NOT_STARTED', String(id), modelName, idleUs);
    if (sequence && params.start) {
      // Triton's answer to a START on a live id: the old sequence ends early and the new one keeps its instance.
      log('warn', `sequence ${String(id)} for model '${modelName}' has a conflict. The previous sequence did not end before this sequence start. Previous sequence will be terminated early.`);
    }
    if (!sequence) {
      sequence = { lane: this.leastLoadedLane(), pending: 0, idleTimer: undefined };
      this.live.set(key, sequence);
      this.loads[sequence.lane]++;
    }
    clock.clearTimer(sequence.idleTimer);
    sequence.idleTimer = undefined;
    sequence.pending++;
    if (params.end) this.forget(key);
    const bound = sequence;
    let settled = false;
    return {
      lane: bound.lane,
      key,
      correlationId: id,
      start: params.start,
      end: params.end,
      done: () => {
        if (settled) return;
        settled = true;
        bound.pending--;
        if (bound.pending === 0 && this.live.get(key) === bound) bound.idleTimer = clock.setTimer(() => this.expire(key, bound), idleUs);
      },
    };
  }

  /** The instance of `lane` died: forgets its sequences (their state is gone) and starts none there until `laneUp`. */
  laneDown(lane: number): number {
    this.down.add(lane);
    let dropped = 0;
    for (const [key, sequence] of this.live) {
      if (sequence.lane !== lane) continue;
      this.forget(key);
      dropped++;
    }
    return dropped;
  }

  laneUp(lane: number): void {
    this.down.delete(lane);
  }

  /** Stops every idle timer. */
  close(): void {
    for (const key of [...this.live.keys()]) this.forget(key);
  }

  private expire(key: string, sequence: LiveSequence): void {
    if (this.live.get(key) !== sequence || sequence.pending > 0) return;
    this.forget(key);
    this.options.log('info', `sequence ${key.slice(2)} of model '${this.options.modelName}' was idle for ${this.options.idleUs} µs and is released`);
  }

  private forget(key: string): void {
    const sequence = this.live.get(key);
    if (!sequence) return;
    this.options.clock.clearTimer(sequence.idleTimer);
    sequence.idleTimer = undefined;
    this.live.delete(key);
    this.loads[sequence.lane]--;
  }

  /** The up lane with the fewest sequences (the lowest index on a tie); lane 0 when every lane is down. */
  private leastLoadedLane(): number {
    let best: number | undefined;
    for (let lane = 0; lane < this.loads.length; lane++) {
      if (this.down.has(lane)) continue;
      if (best === undefined || this.loads[lane] < this.loads[best]) best = lane;
    }
    return best ?? 0;
  }
}

/** Triton tells a uint64 id from a string id, so 7 and "7" are two sequences. */
function keyOf(id: CorrelationId): string {
  return typeof id === 'number' ? `n:${id}` : `s:${id}`;
}
