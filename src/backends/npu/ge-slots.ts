/**
 * The execution slots of one GE model: each slot is one (ge::Session, graph, stream) triple that
 * runs one execution at a time, as an exec block does in Huawei's Triton GE backend
 * (hicann/triton-inference-server-ge-backend, src/scheduler.cpp and src/inference.cpp).
 */

/**
 * Which slots are idle. acquire() hands out every idle slot a caller can use at once, so one batch
 * spreads over all of them; when every slot is busy, callers wait in arrival order. Slots released
 * together (a batch's, once its executions are done) go to the waiters in that order, each taking
 * as many of them as it wants, so a waiting batch spreads over every slot free by then.
 */
export class ExecutionSlots {
  readonly #idle: number[];
  readonly #waiting: { readonly wanted: number; readonly grant: (slots: number[]) => void }[] = [];

  constructor(readonly count: number) {
    this.#idle = Array.from({ length: count }, (_, i) => i);
  }

  get idle(): number {
    return this.#idle.length;
  }

  /** At most `wanted` (at least 1) idle slots, lowest first; when none is idle or others wait already, as many once released. */
  acquire(wanted: number): Promise<number[]> {
    const want = Math.max(1, wanted);
    if (this.#idle.length > 0 && this.#waiting.length === 0) return Promise.resolve(this.#idle.splice(0, want));
    return new Promise((grant) => this.#waiting.push({ wanted: want, grant }));
  }

  release(...slots: number[]): void {
    this.#idle.push(...slots);
    this.#idle.sort((a, b) => a - b);
    while (this.#idle.length > 0 && this.#waiting.length > 0) {
      const next = this.#waiting.shift()!;
      next.grant(this.#idle.splice(0, next.wanted));
    }
  }
}
