// How full the CloudFront KeyValueStore may get, stated once: `isoatlas keys publish` reports and
// enforces it (build/keys/store-size.ts), the tests check it, and it is exported for an alarm on the
// store's size to use the same limit and fraction.
//
// AWS's figures, from the CloudFront Developer Guide, "Quotas" → "Quotas on key value stores":
// "Maximum size of an individual key value store", "Maximum size of a key in a key-value pair",
// "Maximum size of the value in a key-value pair" and "Maximum key values pairs that you can update
// in a single API request". The page offers no increase for the store's size, and its "Maximum
// number of key value stores per function" is one, so the keys cannot be spread over a second
// store. It says neither which megabyte (or kilobyte) it means nor how a store's size is counted;
// the API reference's DescribeKeyValueStore ("TotalSizeInBytes") gives the store's own count. Here
// a store's size is the UTF-8 bytes of every key and value, against the smaller reading of each
// unit, so warnings come early rather than late; publish compares this count with the store's own
// (build/keys/kvs.ts) and takes the larger.
import { encodeKeyRecord, keyEntry } from './kvs-layout.js';

export const KVS_SIZE_LIMIT_BYTES = 5_000_000;
export const KVS_KEY_LIMIT_BYTES = 512;
export const KVS_VALUE_LIMIT_BYTES = 1_000;
/** Entries per UpdateKeys call: AWS's limit in entries (its payload limit is far above what ours take). */
export const KVS_UPDATE_BATCH = 50;
/** From this fraction of the limit on, `keys publish` warns; the fraction for an alarm on the store's size too. */
export const KVS_WARN_FRACTION = 0.8;
/** From this fraction on, `keys publish` adds no new keys (it still writes revocations and removals);
 * what is left above it is for those and for the day meter's marks. */
export const KVS_REFUSE_FRACTION = 0.95;

const utf8 = new TextEncoder();
export const byteLength = (text: string) => utf8.encode(text).length;

/** One entry's share of the store's size. */
export const entryBytes = (key: string, value: string) => byteLength(key) + byteLength(value);

/** The largest day mark (seconds since the epoch) of this and the next few centuries. */
const LATEST_MARK = 9_999_999_999;
const ID_EXAMPLE = 's'.repeat(9); // a lettered id, the longer form
const HASH_EXAMPLE = '0'.repeat(64);
const REVOKED_EXAMPLE = new Date(0).toISOString();

/** The bytes of one key's entry at its largest: a lettered id, the meter's day mark set, and, when
 * `revoked`, a revocation time. */
export function keyEntryBytes(tier: string, revoked: boolean): number {
  const value = encodeKeyRecord({
    hash: HASH_EXAMPLE,
    tier,
    revoked_at: revoked ? REVOKED_EXAMPLE : null,
    exhausted_until: LATEST_MARK,
  });
  return entryBytes(keyEntry(ID_EXAMPLE), value);
}

/** The bytes a day mark may still add to a key entry's value: the meter sets `exhausted_until` on an
 * active key that used up its day (a revoked one is refused before it is counted). */
export function markRoom(record: { revoked_at: string | null; exhausted_until: number }): number {
  if (record.revoked_at) return 0;
  return Math.max(0, String(LATEST_MARK).length - String(record.exhausted_until).length);
}
