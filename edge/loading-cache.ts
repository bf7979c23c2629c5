// A cache of loaded things (file bodies, parsed shards) bounded by weight, evicting the least
// recently used. Concurrent requests for the same key share one load; a failed load is not kept, so
// the next request tries again. The edge's memory is fixed (128 MB at Lambda@Edge): whatever a
// release has, an instance holds at most `budget` of it.
export class LoadingCache<T> {
  private readonly entries = new Map<string, { value: T; weight: number }>();
  private readonly loading = new Map<string, Promise<T>>();
  private used = 0;

  constructor(readonly budget: number) {}

  /** The cached value, marked as recently used, or undefined. */
  peek(key: string): T | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit.value;
  }

  get(key: string, load: () => Promise<{ value: T; weight: number }>): Promise<T> {
    const hit = this.peek(key);
    if (hit !== undefined) return Promise.resolve(hit);
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
    for (const [oldest, entry] of this.entries) {
      if (this.used + weight <= this.budget) break;
      this.entries.delete(oldest);
      this.used -= entry.weight;
    }
    this.entries.set(key, { value, weight });
    this.used += weight;
  }

  get size(): { entries: number; weight: number } {
    return { entries: this.entries.size, weight: this.used };
  }
}
