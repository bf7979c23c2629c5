// Access arrangements and their limits. The same endpoints run in one of two arrangements:
//   open          (A): no key needed; anonymous requests are limited per client IP; a key (Bearer)
//                      is counted per key against its tier, which is higher;
//   key-required  (B): every request needs a key, limited per key by its tier (default 60/min and
//                      5,000/day); a coarse per-IP limit applies before the key is even checked.
// A key's tier names a row in the tier table of the arrangement in force. Each tier has a letter
// (`tier_letters`), the first character of the ids of keys issued for it, so the CDN's WAF can tell a
// key's tier from the key itself; a letter is declared, never derived from order, because issued keys
// carry it for good.
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
  /** Tier name → the letter (of the id alphabet, a-z and 2-7) that starts its new keys' ids. */
  tier_letters: Record<string, string>;
  /** keyed_per_ip: every request that carries a key, counted per address whatever the keys, so a key
   * spelled or copied many ways still has an address ceiling. Unset: twice the highest tier's
   * per-minute limit, so one key at full speed is never cut. */
  open: { anonymous_per_ip: Limits; keyed_per_ip: Limits; tiers: Record<string, Limits> };
  key_required: { per_ip: Limits; tiers: Record<string, Limits> };
}
export type AccessMode = AccessConfig['mode'];

/** Defaults. Open: 900 requests/min per IP anonymously (15/s, as Ensembl REST allows), keys 3,000/min
 * (standard) or 12,000/min (plus), and at most 24,000/min with keys from one IP (twice plus's).
 * Key-required: 60/min and 5,000/day (standard) or 600/min and
 * 100,000/day (plus), and at most 1,200/min from one IP whatever the keys. */
export const DEFAULT_ACCESS: AccessConfig = {
  mode: 'open',
  default_tier: 'standard',
  ipv6_prefix: 64,
  tier_letters: { standard: 's', plus: 'p' },
  open: {
    anonymous_per_ip: { per_minute: 900 },
    keyed_per_ip: { per_minute: 24000 },
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
    if (key !== 'per_minute' && key !== 'per_day')
      problems.push(`${where}.${key} is not a known limit (per_minute, per_day)`);
    else if (!Number.isInteger(v) || (v as number) < 1) problems.push(`${where}.${key} must be a positive integer`);
  }
  return problems;
}

/** The alphabet of key ids (base32, lower case): a tier's letter is one of these. */
export const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** The letters of the tiers named in either table: the file's, else the default's for a tier of a
 * default name. A letter named for a tier in no table is kept (keys issued for it still carry it). */
function tierLetters(given: unknown, tierNames: string[]): { letters: Record<string, string>; problems: string[] } {
  if (given !== undefined && (!given || typeof given !== 'object' || Array.isArray(given)))
    return { letters: {}, problems: ['tier_letters must be an object of tier name → letter'] };
  const letters: Record<string, string> = { ...((given as Record<string, string>) ?? {}) };
  for (const tier of tierNames)
    if (letters[tier] === undefined && Object.hasOwn(DEFAULT_ACCESS.tier_letters, tier))
      letters[tier] = DEFAULT_ACCESS.tier_letters[tier];
  const problems: string[] = [];
  const byLetter = new Map<string, string>();
  for (const [tier, letter] of Object.entries(letters)) {
    if (typeof letter !== 'string' || letter.length !== 1 || !ID_ALPHABET.includes(letter)) {
      problems.push(`tier_letters.${tier} must be one character of a-z or 2-7, not ${JSON.stringify(letter)}`);
    } else if (byLetter.has(letter)) {
      problems.push(
        `tiers ${byLetter.get(letter)} and ${tier} both have the letter "${letter}": give each tier its own letter (keep the one its issued keys carry)`,
      );
    } else byLetter.set(letter, tier);
  }
  for (const tier of tierNames) {
    if (letters[tier] === undefined)
      problems.push(
        `tier ${tier} has no letter: add "${tier}": "<letter>" to tier_letters, a character of a-z or 2-7 that no other tier uses (it starts the ids of the tier's keys and must not change once keys are issued)`,
      );
  }
  return { letters, problems };
}

/** The per-address ceiling on keyed requests in A: the file's, else twice the highest tier's
 * per-minute limit (none when no tier has one). */
function keyedPerIp(given: unknown, tiers: Record<string, Limits>): { limits: Limits; problems: string[] } {
  const highest = Math.max(0, ...Object.values(tiers ?? {}).map((l) => l?.per_minute ?? 0));
  if (given === undefined) return { limits: highest ? { per_minute: 2 * highest } : {}, problems: [] };
  const problems = checkLimits('open.keyed_per_ip', given);
  if (problems.length) return { limits: {}, problems };
  const limits = given as Limits;
  // Only a minute limit: the CDN counts addresses with WAF rate rules, which have no day window.
  if (limits.per_day !== undefined)
    problems.push('open.keyed_per_ip takes per_minute only (the CDN has no per-address day counter)');
  else if (limits.per_minute !== undefined && limits.per_minute < highest) {
    problems.push(
      `open.keyed_per_ip.per_minute (${limits.per_minute}) is below a tier's per_minute (${highest}): one key at full speed would be cut at its address; raise it or remove it (default: twice the highest tier's)`,
    );
  }
  return { limits, problems };
}

/** Overlays a partial config (as read from a file) on the defaults, section by section, and checks it. */
export function resolveAccessConfig(partial: unknown, mode?: AccessMode): AccessConfig {
  const p = (partial ?? {}) as Partial<AccessConfig>;
  const merged: AccessConfig = {
    mode: mode ?? p.mode ?? DEFAULT_ACCESS.mode,
    default_tier: p.default_tier ?? DEFAULT_ACCESS.default_tier,
    ipv6_prefix: p.ipv6_prefix ?? DEFAULT_ACCESS.ipv6_prefix,
    tier_letters: {},
    open: { ...DEFAULT_ACCESS.open, ...p.open },
    key_required: { ...DEFAULT_ACCESS.key_required, ...p.key_required },
  };
  const problems: string[] = [];
  const known = new Set(Object.keys(DEFAULT_ACCESS));
  for (const key of Object.keys(p)) if (!known.has(key)) problems.push(`unknown setting "${key}"`);
  if (merged.mode !== 'open' && merged.mode !== 'key-required') problems.push('mode must be "open" or "key-required"');
  if (!Number.isInteger(merged.ipv6_prefix) || merged.ipv6_prefix < 1 || merged.ipv6_prefix > IPV6_BITS)
    problems.push(`ipv6_prefix must be an integer from 1 to ${IPV6_BITS}`);
  problems.push(...checkLimits('open.anonymous_per_ip', merged.open.anonymous_per_ip));
  problems.push(...checkLimits('key_required.per_ip', merged.key_required.per_ip));
  const keyed = keyedPerIp(p.open?.keyed_per_ip, merged.open.tiers);
  merged.open.keyed_per_ip = keyed.limits;
  problems.push(...keyed.problems);
  const tierNames = [
    ...new Set([...Object.keys(merged.open.tiers ?? {}), ...Object.keys(merged.key_required.tiers ?? {})]),
  ];
  const letters = tierLetters(p.tier_letters, tierNames);
  merged.tier_letters = letters.letters;
  problems.push(...letters.problems);
  for (const [section, tiers] of [
    ['open', merged.open.tiers],
    ['key_required', merged.key_required.tiers],
  ] as const) {
    for (const [tier, limits] of Object.entries(tiers ?? {}))
      problems.push(...checkLimits(`${section}.tiers.${tier}`, limits));
    if (!tiers?.[merged.default_tier])
      problems.push(`default tier "${merged.default_tier}" is missing from ${section}.tiers`);
  }
  if (problems.length) throw new Error(`invalid access config: ${problems.slice(0, 3).join('; ')}`);
  return merged;
}

export function tierLimits(config: AccessConfig, tier: string): Limits {
  const table = config.mode === 'open' ? config.open.tiers : config.key_required.tiers;
  return table[tier] ?? table[config.default_tier];
}
