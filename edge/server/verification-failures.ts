// The files the local server refused because they failed verification (corrupt, or listed and
// missing), for /health: while any is known, the server is degraded. A file leaves the set when it
// verifies again: /health checks a few of them at each probe (a file put back by hand), and all are
// forgotten when what is served was written anew (a mirror's sync hashes again the objects the server
// refused, noted in the mirror by edge/mirror/refused-record.ts, and fetches a corrupt one again; a
// rebuild writes a new tree).
import type { VerificationFailure } from '../origins/verified.js';

/** Files remembered one by one; beyond, only counted (a disk gone bad fails in bulk). */
const REMEMBERED = 1000;
/** Files checked again per /health probe: a probe stays cheap however many failed. */
const RECHECKED = 8;

export interface Degraded {
  /** Files that failed verification and have not verified since. */
  count: number;
  /** The first of them still failing: a tree path. */
  first: string;
}

export class VerificationFailures {
  private readonly failing = new Map<string, VerificationFailure>();
  /** Failures beyond those remembered: cleared only when what is served is written anew. */
  private uncounted = 0;
  private written: string | null = null;
  private cursor = 0;

  readonly record = (failure: VerificationFailure): void => {
    if (this.failing.has(failure.path)) return;
    if (this.failing.size < REMEMBERED) this.failing.set(failure.path, failure);
    else this.uncounted++;
  };

  /** Null while all is well. `written` names the state of what is served (the mirror's last sync,
   * the tree's manifest): when it changes, what failed before is forgotten. */
  async check(written: string): Promise<Degraded | null> {
    // The first probe learns the state; failures before it are kept.
    if (this.written !== null && written !== this.written) {
      this.failing.clear();
      this.uncounted = 0;
      this.cursor = 0;
    }
    this.written = written;
    // A window that moves on at each probe, so every remembered file is checked again in turn.
    const all = [...this.failing.values()];
    const start = all.length === 0 ? 0 : this.cursor % all.length;
    const batch = Array.from({ length: Math.min(RECHECKED, all.length) }, (_, i) => all[(start + i) % all.length]);
    for (const failure of batch) if (await failure.recheck()) this.failing.delete(failure.path);
    this.cursor = start + batch.length;
    const count = this.failing.size + this.uncounted;
    if (count === 0) return null;
    // Remembered in the order they failed: the first is the oldest still failing.
    const first = this.failing.keys().next().value ?? '';
    return { count, first };
  }
}
