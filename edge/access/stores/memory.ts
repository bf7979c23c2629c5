// In-process counters: the local server and mirrors (one process), and the per-instance fallback
// when the shared store is unreachable.
import type { HitResult, QuotaStore } from '../quota-store.js';

export class MemoryQuotaStore implements QuotaStore {
  readonly description = 'in-process memory';
  private readonly counters = new Map<string, { count: number; expiresAt: number }>();
  private nextSweep = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async hit(counter: string, limit: number, expiresAt: number): Promise<HitResult> {
    const now = this.now();
    if (now >= this.nextSweep) this.sweep(now);
    let entry = this.counters.get(counter);
    if (!entry || entry.expiresAt <= now) {
      entry = { count: 0, expiresAt };
      this.counters.set(counter, entry);
    }
    if (entry.count >= limit) return { admitted: false, count: entry.count };
    entry.count += 1;
    return { admitted: true, count: entry.count };
  }

  async undo(counter: string): Promise<void> {
    const entry = this.counters.get(counter);
    if (entry && entry.count > 0) entry.count -= 1;
  }

  /** Expired windows are dropped at most once a minute, so memory stays bounded by live windows. */
  private sweep(now: number) {
    for (const [key, entry] of this.counters) if (entry.expiresAt <= now) this.counters.delete(key);
    this.nextSweep = now + 60_000;
  }

  get size(): number {
    return this.counters.size;
  }
}
