// Access arrangements and their limits. The same endpoints run in one of two arrangements:
//   open          (A): no key needed; anonymous requests are limited per client IP; a key (Bearer)
//                      is counted per key against its tier, which is higher;
//   key-required  (B): every request needs a key, limited per key by its tier (default 60/min and
//                      5,000/day); a coarse per-IP limit applies before the key is even checked.
// A key's tier names a row in the tier table of the arrangement in force.
// Plain types and a hand-written check (no schema library): this module is bundled into the edge,
// where every kilobyte counts.

import { IPV6_BITS } from './client-key.js';

export interface Limits {
  per_minute?: number;
  per_day?: number;
}

export interface AccessConfig {
  mode: 'open' | 'key-required';
  default_tier: string;
  /** IPv6 clients are counted per network of this prefix length (IPv4 per address): client-key.ts. */
  ipv6_prefix: number;
  open: { anonymous_per_ip: Limits; tiers: Record<string, Limits> };
  key_required: { per_ip: Limits; tiers: Record<string, Limits> };
}
export type AccessMode = AccessConfig['mode'];

/** Defaults. Open: 900 requests/min per IP anonymously (15/s, as Ensembl REST allows), keys 3,000/min
 * (standard) or 12,000/min (plus). Key-required: 60/min and 5,000/day (standard) or 600/min and
 * 100,000/day (plus), and at most 1,200/min from one IP whatever the keys. */
export const DEFAULT_ACCESS: AccessConfig = {
  mode: 'open',
  default_tier: 'standard',
  ipv6_prefix: 64,
  open: {
    anonymous_per_ip: { per_minute: 900 },
    tiers: { standard: { per_minute: 3000 }, plus: { per_minute: 12000 } },
  },
  key_required: {
    per_ip: { per_minute: 1200 },
    tiers: { standard: { per_minute: 60, per_day: 5000 }, plus: { per_minute: 600, per_day: 100000 } },
  },
};

function checkLimits(where: string, value: unknown): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [`${where} must be an object`];
  const problems: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (key !== 'per_minute' && key !== 'per_day') problems.push(`${where}.${key} is not a known limit (per_minute, per_day)`);
    else if (!Number.isInteger(v) || (v as number) < 1) problems.push(`${where}.${key} must be a positive integer`);
  }
  return problems;
}

/** Overlays a partial config (as read from a file) on the defaults, section by section, and checks it. */
export function resolveAccessConfig(partial: unknown, mode?: AccessMode): AccessConfig {
  const p = (partial ?? {}) as Partial<AccessConfig>;
  const merged: AccessConfig = {
    mode: mode ?? p.mode ?? DEFAULT_ACCESS.mode,
    default_tier: p.default_tier ?? DEFAULT_ACCESS.default_tier,
    ipv6_prefix: p.ipv6_prefix ?? DEFAULT_ACCESS.ipv6_prefix,
    open: { ...DEFAULT_ACCESS.open, ...p.open },
    key_required: { ...DEFAULT_ACCESS.key_required, ...p.key_required },
  };
  const problems: string[] = [];
  const known = new Set(Object.keys(DEFAULT_ACCESS));
  for (const key of Object.keys(p)) if (!known.has(key)) problems.push(`unknown setting "${key}"`);
  if (merged.mode !== 'open' && merged.mode !== 'key-required') problems.push('mode must be "open" or "key-required"');
  if (!Number.isInteger(merged.ipv6_prefix) || merged.ipv6_prefix < 1 || merged.ipv6_prefix > IPV6_BITS) problems.push(`ipv6_prefix must be an integer from 1 to ${IPV6_BITS}`);
  problems.push(...checkLimits('open.anonymous_per_ip', merged.open.anonymous_per_ip));
  problems.push(...checkLimits('key_required.per_ip', merged.key_required.per_ip));
  for (const [section, tiers] of [['open', merged.open.tiers], ['key_required', merged.key_required.tiers]] as const) {
    for (const [tier, limits] of Object.entries(tiers ?? {})) problems.push(...checkLimits(`${section}.tiers.${tier}`, limits));
    if (!tiers?.[merged.default_tier]) problems.push(`default tier "${merged.default_tier}" is missing from ${section}.tiers`);
  }
  if (problems.length) throw new Error(`invalid access config: ${problems.slice(0, 3).join('; ')}`);
  return merged;
}

export function tierLimits(config: AccessConfig, tier: string): Limits {
  const table = config.mode === 'open' ? config.open.tiers : config.key_required.tiers;
  return table[tier] ?? table[config.default_tier];
}
