// A cache of loaded things (file bodies, parsed shards) bounded by weight, evicting what was not used
// lately: second chance (CLOCK), the usual stand-in for least-recently-used. A hit only marks its
// entry; moving it to the young end of the map on every hit (exact LRU) would cost a delete and an
// insert per request. Concurrent requests for the same key share one load; a failed load is not
// kept, so the next request tries again. An edge instance's memory is fixed: whatever a release has,
// an instance holds at most `budget` of it.
export class LoadingCache<T> {
  /** Lookups answered from a cache and lookups that had to load, over every cache of the process
   * (a server's metrics report them). */
  static readonly totals = { hits: 0, misses: 0 };
  /** Oldest first; `used`: hit since it was last passed over for eviction. */
  private readonly entries = new Map<string, { value: T; weight: number; used: boolean }>();
  private readonly loading = new Map<string, Promise<T>>();
  private used = 0;

  constructor(readonly budget: number) {}

  /** The cached value, marked as used, or undefined. */
  peek(key: string): T | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    hit.used = true;
    return hit.value;
  }

  get(key: string, load: () => Promise<{ value: T; weight: number }>): Promise<T> {
    const hit = this.peek(key);
    if (hit !== undefined) {
      LoadingCache.totals.hits++;
      return Promise.resolve(hit);
    }
    LoadingCache.totals.misses++;
    let pending = this.loading.get(key);
    if (!pending) {
      pending = load()
        .then(({ value, weight }) => {
          this.put(key, value, weight);
          return value;
        })
        .finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    return pending;
  }

  private put(key: string, value: T, weight: number): void {
    if (weight > this.budget) return; // larger than the whole budget: used once, never kept
    // From the oldest: an entry used since it was last passed over gets a second chance (moved to
    // the young end, unmarked); the first unused one goes. Moved entries come round again in this
    // same loop, unmarked, so it ends.
    for (const [oldest, entry] of this.entries) {
      if (this.used + weight <= this.budget) break;
      this.entries.delete(oldest);
      if (entry.used) {
        entry.used = false;
        this.entries.set(oldest, entry);
      } else this.used -= entry.weight;
    }
    this.entries.set(key, { value, weight, used: false });
    this.used += weight;
  }

  get size(): { entries: number; weight: number } {
    return { entries: this.entries.size, weight: this.used };
  }
}
