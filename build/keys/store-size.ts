// The KeyValueStore's size as `isoatlas keys publish` leaves it (edge/cloudfront/kvs-capacity.ts says
// how it is counted and where the limits come from), and what publish says about it.
import {
  entryBytes,
  KVS_REFUSE_FRACTION,
  KVS_SIZE_LIMIT_BYTES,
  KVS_WARN_FRACTION,
  keyEntryBytes,
  markRoom,
} from '../../edge/cloudfront/kvs-capacity.js';
import {
  CURRENT_RELEASE_ENTRY,
  decodeKeyRecord,
  KEY_ENTRY_PREFIX,
  REVOKED_KEY_EXPIRY_DAYS,
  SECRET_ENTRY,
} from '../../edge/cloudfront/kvs-layout.js';

/** The bytes publish lets the store reach: past it, no key is added. */
const REFUSE_BYTES = Math.floor(KVS_SIZE_LIMIT_BYTES * KVS_REFUSE_FRACTION);

export interface StoreSize {
  entries: number;
  /** The entries' key and value bytes, plus what the store counts beyond them (`uncounted`). */
  bytes: number;
  /** What the day meter's marks may still add (the meter cannot write them in a full store either). */
  markRoom: number;
  /** (bytes + markRoom) / the limit: what the warning and the refusal go by. */
  fraction: number;
  /** Active keys that still fit before publish stops adding keys, each at `keyBytes`. */
  keysLeft: number;
  keyBytes: number;
  revokedKeyBytes: number;
}

/** Counts a store's entries, each at its largest. `uncounted`: bytes per entry the store's own count
 * holds beyond key and value (from DescribeKeyValueStore); `tier`: the tier whose entries are largest. */
export class StoreLedger {
  private bytes = 0;
  private marks = 0;
  private count = 0;

  constructor(
    private readonly uncounted: number,
    private readonly tier: string,
  ) {}

  add(key: string, value: string): void {
    this.bytes += entryBytes(key, value) + this.uncounted;
    this.marks += this.markOf(key, value);
    this.count++;
  }

  /** Adds the entry when the store stays within what publish lets it reach; says whether it did. */
  addWithinLimit(key: string, value: string): boolean {
    const grows = entryBytes(key, value) + this.uncounted + this.markOf(key, value);
    if (this.bytes + this.marks + grows > REFUSE_BYTES) return false;
    this.add(key, value);
    return true;
  }

  size(): StoreSize {
    const keyBytes = keyEntryBytes(this.tier, false) + this.uncounted;
    return {
      entries: this.count,
      bytes: Math.round(this.bytes),
      markRoom: this.marks,
      fraction: (this.bytes + this.marks) / KVS_SIZE_LIMIT_BYTES,
      keysLeft: Math.max(0, Math.floor((REFUSE_BYTES - this.bytes - this.marks) / keyBytes)),
      keyBytes: Math.ceil(keyBytes),
      revokedKeyBytes: Math.ceil(keyEntryBytes(this.tier, true) + this.uncounted),
    };
  }

  private markOf(key: string, value: string): number {
    if (!key.startsWith(KEY_ENTRY_PREFIX)) return 0;
    const record = decodeKeyRecord(value);
    return record ? markRoom(record) : 0;
  }
}

/** Entries neither publish nor `isoatlas publish` writes: the bytes someone else's entries take. */
export function foreignBytes(entries: ReadonlyMap<string, string>, ours: (key: string) => boolean): number {
  let bytes = 0;
  for (const [key, value] of entries)
    if (key !== SECRET_ENTRY && key !== CURRENT_RELEASE_ENTRY && !ours(key)) bytes += entryBytes(key, value);
  return bytes;
}

const n = (x: number) => x.toLocaleString('en-US');
/** Rounded down, so a store is never shown at a line it has not reached. */
const percent = (fraction: number) => `${(Math.floor(fraction * 1000) / 10).toFixed(1)}%`;
const LIMIT = `${n(KVS_SIZE_LIMIT_BYTES)}-byte limit`;
const STOP = `publish adds no keys past ${percent(KVS_REFUSE_FRACTION)}`;
const HOW_TO_MAKE_ROOM = `revoke keys no longer used (\`isoatlas keys revoke <id>\`, then \`keys publish\`): a revoked key leaves the store ${REVOKED_KEY_EXPIRY_DAYS} days after its revocation, at the first publish after that`;
const SEE = 'docs/OPERATIONS.md, "The key store\'s size"';

/** The line publish always writes. `counted`: the store's own count after the publish, if it gave one. */
export function sizeReport(arn: string, s: StoreSize, counted: number | undefined): string {
  const own = counted === undefined ? '' : ` (the store counts ${n(counted)})`;
  return (
    `key store ${arn} after this publish: ${n(s.entries)} entries, ${n(s.bytes)} bytes${own}, ` +
    `${percent(s.bytes / KVS_SIZE_LIMIT_BYTES)} of its ${LIMIT}, ${percent(s.fraction)} with a day mark on every active key; ` +
    `room for ${n(s.keysLeft)} more keys before ${STOP} (a key's entry takes up to ${s.keyBytes} bytes, ${s.revokedKeyBytes} once revoked)`
  );
}

/** The warning from KVS_WARN_FRACTION on, or null below it. */
export function sizeWarning(arn: string, s: StoreSize): string | null {
  if (s.fraction < KVS_WARN_FRACTION) return null;
  return (
    `key store ${arn} is at ${percent(s.fraction)} of its ${LIMIT} (day marks included): ${STOP}, ` +
    `room for ${n(s.keysLeft)} more. Make room before then: ${HOW_TO_MAKE_ROOM} (${SEE})`
  );
}

/** Why publish left keys out, and what to do. `nextExpiry`: when the next revoked keys leave. */
export function refusal(
  arn: string,
  s: StoreSize,
  refusedIds: readonly string[],
  foreign: number,
  nextExpiry: { date: Date; keys: number } | null,
): string {
  const next = nextExpiry
    ? ` (the next ${nextExpiry.keys} leave on ${nextExpiry.date.toISOString().slice(0, 10)})`
    : ' (no revoked key is waiting to leave)';
  const others =
    foreign > 0 ? `; delete the entries this registry did not write if they are not needed (${n(foreign)} bytes)` : '';
  return (
    `key store ${arn} is full: ${STOP} of its ${LIMIT}, so ${refusedIds.length} new key(s) were not added ` +
    `(${refusedIds.join(', ')}); revocations and removals were written, and the store is at ${percent(s.fraction)} ` +
    `(day marks included). To make room: ${HOW_TO_MAKE_ROOM}${next}${others}. AWS offers no larger store, and the key gate, a ` +
    `CloudFront function, reads one store, so the keys cannot be split over two (${SEE})`
  );
}
