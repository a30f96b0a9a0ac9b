import { createHash } from 'node:crypto';

/**
 * Automatic prefix caching as vLLM keys it (docs/design/prefix_caching.md): each full block of
 * tokens is named by a chained hash (sha256 of the previous block's hash and this block's tokens),
 * so equal hashes mean equal prefixes. A finished sequence's cache stays on its instance as a
 * donor; a new sequence whose leading blocks hash the same copies that prefix from the donor's
 * cache instead of computing it. Donors are evicted least recently used first when blocks run short.
 */
export function blockHashes(tokenAt: (index: number) => number, tokens: number, blockSize: number): string[] {
  const hashes: string[] = [];
  let previous = '';
  for (let block = 0; (block + 1) * blockSize <= tokens; block++) {
    const ids = Array.from({ length: blockSize }, (_, k) => tokenAt(block * blockSize + k));
    previous = createHash('sha256').update(`${previous}|${ids.join(',')}`).digest('hex');
    hashes.push(previous);
  }
  return hashes;
}

export class PrefixCache {
  private readonly byHash = new Map<string, number>();
  /** Donor sequence → its block hashes, least recently used first. */
  private readonly donors = new Map<number, readonly string[]>();

  get donorIds(): IterableIterator<number> {
    return this.donors.keys();
  }

  add(donor: number, hashes: readonly string[]): void {
    if (hashes.length === 0) return;
    for (const hash of hashes) this.byHash.set(hash, donor);
    this.donors.set(donor, hashes);
  }

  /** The donor holding the longest run of `hashes`, and how many blocks it holds of them. */
  lookup(hashes: readonly string[]): { readonly donor: number; readonly blocks: number } | undefined {
    let hit: { donor: number; blocks: number } | undefined;
    for (let i = 0; i < hashes.length; i++) {
      const donor = this.byHash.get(hashes[i]!);
      if (donor === undefined) break;
      hit = { donor, blocks: i + 1 };
    }
    if (hit) {
      const own = this.donors.get(hit.donor)!;
      this.donors.delete(hit.donor);
      this.donors.set(hit.donor, own);
    }
    return hit;
  }

  /** The least recently used donor not in `keep`. */
  oldest(keep: ReadonlySet<number>): number | undefined {
    for (const donor of this.donors.keys()) if (!keep.has(donor)) return donor;
    return undefined;
  }

  remove(donor: number): void {
    for (const hash of this.donors.get(donor) ?? []) if (this.byHash.get(hash) === donor) this.byHash.delete(hash);
    this.donors.delete(donor);
  }
}
