// What the CloudFront KeyValueStore holds for the key gate (edge/cloudfront/key-gate-function.js), stated
// once: `isoatlas keys publish` writes it, the day meter updates it, the tests' harness serves it.
//   secret        the hex secret that keys the stored hashes (the function cannot hold it: its code
//                 is in the template)
//   key:<id>      JSON { hash, tier, revoked_at, exhausted_until } of one API key; exhausted_until is
//                 seconds since the epoch (0: not exhausted), written by the meter only
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

/** The store's entries for a registry: every key (revoked ones too, so they are refused as revoked)
 * and the secret. Exhaustion is the meter's to set; publish keeps what the store already says. */
export function kvsEntries(keys: readonly EdgeKeyRecord[], secretHex: string): Map<string, string> {
  const entries = new Map<string, string>([[SECRET_ENTRY, secretHex.trim().toLowerCase()]]);
  for (const k of keys)
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
