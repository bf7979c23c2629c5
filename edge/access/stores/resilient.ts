// The shared store may be unreachable (network, throttling, an outage). The edge must keep serving:
// policy fail-open with a per-instance limit. While the shared store fails, hits go to an in-memory
// store with the same limits (so one instance still enforces them for what it sees), the failure is
// logged once per episode, and the shared store is tried again after `retryAfterMs`.
import type { HitResult, QuotaStore } from '../quota-store.js';
import { MemoryQuotaStore } from './memory.js';

export class FailOpenQuotaStore implements QuotaStore {
  readonly description: string;
  private readonly fallback: MemoryQuotaStore;
  private failingUntil = 0;
  /** When the current failure was noticed. */
  private failedAt = 0;

  constructor(
    private readonly shared: QuotaStore,
    private readonly log: (line: string) => void = (line) => console.error(line),
    private readonly retryAfterMs = 5_000,
    private readonly now: () => number = Date.now,
  ) {
    this.description = `${shared.description} (fail-open to in-process memory)`;
    this.fallback = new MemoryQuotaStore(now);
  }

  /** True while hits are being counted per instance because the shared store failed. */
  get degraded(): boolean {
    return this.now() < this.failingUntil;
  }

  async hit(counter: string, limit: number, expiresAt: number): Promise<HitResult> {
    if (!this.degraded) {
      const startedAt = this.now();
      try {
        const result = await this.shared.hit(counter, limit, expiresAt);
        // Only a hit sent after the failure was noticed says the store is back: a slow one sent before
        // it may still succeed, and must not end the outage (which the next failure would log again).
        if (this.failingUntil !== 0 && startedAt >= this.failedAt) {
          this.failingUntil = 0;
          this.log(`isoatlas quota: ${this.shared.description} is answering again; shared limits restored`);
        }
        return result;
      } catch (err) {
        if (this.failingUntil === 0) {
          this.failedAt = this.now();
          this.log(`isoatlas quota: ${this.shared.description} failed (${(err as Error).name}: ${(err as Error).message}); serving with per-instance limits`);
        }
        this.failingUntil = this.now() + this.retryAfterMs;
      }
    }
    return this.fallback.hit(counter, limit, expiresAt);
  }

  async undo(counter: string): Promise<void> {
    await (this.degraded ? this.fallback : this.shared).undo(counter).catch(() => {});
  }
}
