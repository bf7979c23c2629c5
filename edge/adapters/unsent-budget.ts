// What answers not yet taken by their clients hold in the server's memory (SERVER_LIMITS): every
// byte of an answer is charged from the moment the server holds it until it is handed to the system,
// per connection and in all. A client that asks without reading is cut off when its connection is
// over its share; when all connections together are over the budget, the connection that has taken
// nothing for longest is cut to make room, so that a client that reads is still answered.
import type { ServerLimits } from './server-limits.js';

/** One connection's part of the budget. */
export interface ConnectionCharge {
  /** Bytes charged and not yet handed to the system. */
  unsent: number;
  /** When its client last took something (or it was first charged), for choosing whom to cut. */
  progressAt: number;
  /** Cuts the connection and releases what its answers hold. */
  cut: () => void;
}

export class UnsentBudget {
  private total = 0;
  /** Connections holding unsent bytes. */
  private readonly holders = new Set<ConnectionCharge>();

  constructor(
    private readonly limits: Pick<ServerLimits, 'maxUnsentBytesPerConnection' | 'maxUnsentBytes'>,
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /** Bytes held in all. */
  get held(): number {
    return this.total;
  }

  /** Charges `size` bytes to `conn` when its share allows; false when the connection, already
   * holding unsent bytes, would go over its share or is the one cut to make room: the caller cuts it.
   * Other connections may be cut (conn.cut) so the total stays within the budget. */
  charge(conn: ConnectionCharge, size: number): boolean {
    if (conn.unsent > 0 && conn.unsent + size > this.limits.maxUnsentBytesPerConnection) return false;
    while (this.total + size > this.limits.maxUnsentBytes) {
      const stalled = this.mostStalled();
      if (!stalled) break;
      if (stalled === conn) return false;
      stalled.cut();
      // A cut connection releases its charges; one that did not would loop forever.
      if (this.holders.has(stalled)) this.release(stalled, stalled.unsent);
    }
    if (conn.unsent === 0) conn.progressAt = this.now();
    conn.unsent += size;
    this.total += size;
    this.holders.add(conn);
    return true;
  }

  /** Its client took `size` bytes (or they were dropped with the connection). */
  release(conn: ConnectionCharge, size: number): void {
    const n = Math.min(size, conn.unsent);
    conn.unsent -= n;
    this.total -= n;
    conn.progressAt = this.now();
    if (conn.unsent === 0) this.holders.delete(conn);
  }

  private mostStalled(): ConnectionCharge | null {
    let found: ConnectionCharge | null = null;
    for (const c of this.holders) if (!found || c.progressAt < found.progressAt) found = c;
    return found;
  }
}
