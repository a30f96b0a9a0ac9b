/**
 * KV-cache memory of one instance, accounted in fixed-size blocks as vLLM's KVCacheManager
 * accounts it (vllm/config/cache.py: DEFAULT_BLOCK_SIZE = 16 tokens): a sequence holds
 * ⌈tokens / block size⌉ blocks; when none is free, the scheduler preempts. The runtime holds the
 * actual memory; these blocks are the budget that keeps it bounded.
 */
export const BLOCK_SIZE = 16;

export class KvBlocks {
  private free: number;
  private readonly held = new Map<number, number>();

  constructor(
    readonly total: number,
    readonly blockSize = BLOCK_SIZE,
  ) {
    if (!(total > 0)) throw new Error(`a KV pool needs at least one block (got ${total})`);
    this.free = total;
  }

  get freeBlocks(): number {
    return this.free;
  }

  /** Blocks in use, 0..1 (vllm:kv_cache_usage_perc). */
  get usage(): number {
    return (this.total - this.free) / this.total;
  }

  /** The largest number of tokens one sequence can ever hold. */
  get capacityTokens(): number {
    return this.total * this.blockSize;
  }

  blocksOf(sequenceId: number): number {
    return this.held.get(sequenceId) ?? 0;
  }

  /** Extra blocks `sequenceId` needs to hold `tokens` tokens. */
  needed(sequenceId: number, tokens: number): number {
    return Math.max(0, Math.ceil(tokens / this.blockSize) - this.blocksOf(sequenceId));
  }

  /** Grows `sequenceId` to hold `tokens`; false (and nothing taken) when the blocks are not free. */
  grow(sequenceId: number, tokens: number): boolean {
    const extra = this.needed(sequenceId, tokens);
    if (extra > this.free) return false;
    this.free -= extra;
    if (extra > 0) this.held.set(sequenceId, this.blocksOf(sequenceId) + extra);
    return true;
  }

  release(sequenceId: number): void {
    this.free += this.blocksOf(sequenceId);
    this.held.delete(sequenceId);
  }
}
