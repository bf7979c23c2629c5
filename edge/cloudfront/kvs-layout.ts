// What the CloudFront KeyValueStore holds for the key gate (edge/cloudfront/key-gate-function.js), stated
// once: `isoatlas keys publish` writes it, the day meter updates it, the tests' harness serves it.
//   secret        the hex secret that keys the stored hashes (the function cannot hold it: its code
//                 is in the template)
//   key:<id>      JSON { hash, tier, revoked_at, exhausted_until } of one API key; exhausted_until is
//                 seconds since the epoch (0: not exhausted), written by the meter only. A revoked
//                 key's entry stays REVOKED_KEY_EXPIRY_DAYS after its revocation, then publish removes
//                 it (the registry keeps the record)
//   release:current  the name of the current release, written by `isoatlas publish` and `isoatlas
//                 rollback` (given --kvs once, the store records it: build/publish/edge-pin.ts); the gate adds
//                 it to API requests that name no release, and gc keeps that release
import type { EdgeKeyRecord } from '../access/key-registry.js';

/** A KeyValueStore's ARN, as `--kvs` takes it. */
export const KVS_ARN = /^arn:aws:cloudfront::\d{12}:key-value-store\/[\w-]+$/;
export const SECRET_ENTRY = 'secret';
export const CURRENT_RELEASE_ENTRY = 'release:current';
export const KEY_ENTRY_PREFIX = 'key:';
export const keyEntry = (id: string) => `${KEY_ENTRY_PREFIX}${id}`;
/** What the gate logs for each admitted request of a metered tier (a key id, never key material):
 * `isoatlas-meter key=<id> tier=<tier>`, the tier URI-encoded, so the meter knows the tier's day
 * limit without reading the store. */
export const METER_MARK = 'isoatlas-meter key=';
export const METER_TIER = ' tier=';
export const meterLine = (id: string, tier: string) => `${METER_MARK}${id}${METER_TIER}${encodeURIComponent(tier)}`;

export interface KvsKeyRecord {
  hash: string;
  tier: string;
  revoked_at: string | null;
  exhausted_until: number;
}

/** How long a revoked key's entry stays in the store, so its holder is told "revoked" (not "unknown")
 * through a month of scheduled jobs; far longer than any answer given to it can be reused (CloudFront
 * keeps an API answer a day at most, viewers revalidate each one, and the gate runs on every request). */
export const REVOKED_KEY_EXPIRY_DAYS = 30;
const DAY_MS = 86_400_000;

/** The key was revoked at least REVOKED_KEY_EXPIRY_DAYS before `now` (an unreadable time never is). */
export function revocationExpired(key: EdgeKeyRecord, now: Date): boolean {
  return key.revoked_at !== null && now.getTime() - Date.parse(key.revoked_at) >= REVOKED_KEY_EXPIRY_DAYS * DAY_MS;
}

/** The store's entries for a registry: every key (revoked ones too, so they are refused as revoked,
 * until their revocation expires) and the secret. Exhaustion is the meter's to set; publish keeps
 * what the store already says. */
export function kvsEntries(keys: readonly EdgeKeyRecord[], secretHex: string, now = new Date()): Map<string, string> {
  const entries = new Map<string, string>([[SECRET_ENTRY, secretHex.trim().toLowerCase()]]);
  for (const k of keys)
    if (!revocationExpired(k, now))
      entries.set(
        keyEntry(k.id),
        encodeKeyRecord({ hash: k.hash, tier: k.tier, revoked_at: k.revoked_at, exhausted_until: 0 }),
      );
  return entries;
}

export function encodeKeyRecord(r: KvsKeyRecord): string {
  return JSON.stringify({ hash: r.hash, tier: r.tier, revoked_at: r.revoked_at, exhausted_until: r.exhausted_until });
}

export function decodeKeyRecord(value: string): KvsKeyRecord | null {
  try {
    const r = JSON.parse(value) as KvsKeyRecord;
    return typeof r.hash === 'string' && typeof r.tier === 'string'
      ? { ...r, exhausted_until: Number(r.exhausted_until) || 0 }
      : null;
  } catch {
    return null;
  }
}
