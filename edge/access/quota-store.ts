// Where request counters live. One counter per (subject, window): `key:<id>:m:<minute index>`,
// `ip:<address>:d:<day index>`, … A hit is admitted only while the counter is below the limit, and
// the check and the increment are one atomic step, so concurrent requests cannot overshoot.

export interface HitResult {
  admitted: boolean;
  /** The counter after this hit (or the limit, when refused). */
  count: number;
}

export interface QuotaStore {
  /** Adds one to `counter` unless it has reached `limit`. `expiresAt` (ms since the epoch) is when
   * the window ends; the store may forget the counter after that. */
  hit(counter: string, limit: number, expiresAt: number): Promise<HitResult>;
  /** Gives back one admitted hit: when a longer window refuses a request, the shorter windows it
   * already passed must not be charged for it. Best effort. */
  undo(counter: string): Promise<void>;
  readonly description: string;
}
