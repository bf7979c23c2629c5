// The time a key check takes must not say how much of a guessed key is right. Wrong keys matching
// none vs all but the last character of a real key's secret are checked thousands of times,
// interleaved, and compared by the median of their paired differences (each round's times of the
// two, taken back to back); the same statistic must flag a check that does leak (a control with an
// extra HMAC when the prefix matches), so the comparison can fail. A shared machine can make one
// measurement noisy in either direction; a real leak shows in every one, so a check passes when the
// least of a few independent measurements is under the bound (the control must exceed it in all).
import { beforeAll, describe, expect, it } from 'vitest';
import {
  importServerSecret,
  generateKey,
  hashKey,
  keyId,
  keyMatches,
  newServerSecret,
} from '../edge/access/key-format.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { MemoryQuotaStore } from '../edge/access/stores/memory.js';
import type { EdgeKeyRecord, KeyRegistry } from '../edge/access/key-registry.js';

const TRIALS = 3_000;
/** The largest relative difference taken as "no dependence"; a leak of one HMAC is about 100 %. */
const MAX_RELATIVE = 0.15;
/** Independent measurements; noise must push every one of them over the bound to fail a check. */
const ATTEMPTS = 4;

let secret: CryptoKey;
let key: string;
let record: EdgeKeyRecord;
/** Wrong keys with the real key's id: none of the secret right, and all of it but the last character. */
let noneRight: string;
let allButLast: string;

const SECRET_START = 'isoatlas_'.length + 10; // after a lettered id and its underscore
const flip = (c: string) => (c === 'A' ? 'B' : 'A');
/** The candidates must differ in content only: a string built by concatenation is a rope in V8,
 * which encoding walks on every call, so a rope against a flat string times the representation. */
const flat = (s: string) => [...s].join('');

beforeAll(async () => {
  secret = await importServerSecret(newServerSecret());
  key = generateKey('s').key;
  record = { id: keyId(key)!, hash: await hashKey(secret, key), tier: 'standard', revoked_at: null };
  noneRight = flat(key.slice(0, SECRET_START) + [...key.slice(SECRET_START)].map(flip).join(''));
  allButLast = flat(key.slice(0, -1) + flip(key.at(-1)!));
});

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

/** Times (µs) of `check` on each candidate, one round per trial, candidates in alternating order. */
async function rounds(check: (candidate: string) => Promise<unknown>, candidates: string[]): Promise<number[][]> {
  const times = candidates.map(() => [] as number[]);
  for (let i = 0; i < 200; i++) for (const c of candidates) await check(c); // warm up
  for (let i = 0; i < TRIALS; i++) {
    const order = i % 2 ? candidates.map((_, j) => j) : candidates.map((_, j) => candidates.length - 1 - j);
    for (const j of order) {
      const t0 = performance.now();
      await check(candidates[j]);
      times[j].push((performance.now() - t0) * 1000);
    }
  }
  return times;
}

/**
 * How much longer candidate b takes than a, relative to a's typical time: the median of the
 * per-round differences over the median of a. Paired differences cancel what a busy machine adds to
 * both of a round's checks, and their median stays near zero when the times are bimodal (a thread
 * pool that is sometimes asleep), where comparing two medians can land them in different modes.
 */
function relative(a: number[], b: number[]): number {
  return Math.abs(median(b.map((t, i) => t - a[i]))) / median(a);
}

/** Each attempt's relative differences of candidates 1.. against candidate 0, until all are under the bound. */
async function measure(check: (candidate: string) => Promise<unknown>, candidates: string[]): Promise<number[][]> {
  const seen: number[][] = [];
  for (let i = 0; i < ATTEMPTS; i++) {
    const [first, ...rest] = await rounds(check, candidates);
    seen.push(rest.map((times) => relative(first, times)));
    if (seen.at(-1)!.every((r) => r < MAX_RELATIVE)) break;
  }
  return seen;
}

/** The least relative difference of each candidate over the attempts. */
const least = (seen: number[][]) => seen[0].map((_, j) => Math.min(...seen.map((attempt) => attempt[j])));

describe('timing of the key check', () => {
  it('keyMatches: a wrong secret costs the same whether no character or all but one is right', async () => {
    expect(await keyMatches(secret, key, record.hash)).toBe(true);
    expect(await keyMatches(secret, allButLast, record.hash)).toBe(false);
    const seen = await measure((c) => keyMatches(secret, c, record.hash), [noneRight, allButLast]);
    console.log(
      `keyMatches paired difference per attempt: ${seen.map(([r]) => `${(r * 100).toFixed(1)} %`).join(', ')}`,
    );
    expect(least(seen)[0]).toBeLessThan(MAX_RELATIVE);
  });

  it('the same statistic flags a check whose time does depend on the prefix (the control)', async () => {
    const leaky = async (c: string) => {
      // A comparison that does extra work when the first half matches: what a naive check leaks.
      if (c.slice(0, SECRET_START + 20) === key.slice(0, SECRET_START + 20)) await hashKey(secret, c);
      return keyMatches(secret, c, record.hash);
    };
    // Every attempt, not just one: the passing checks above need only their least to be under.
    for (let i = 0; i < ATTEMPTS; i++) {
      const [none, allBut] = await rounds(leaky, [noneRight, allButLast]);
      expect(relative(none, allBut)).toBeGreaterThan(MAX_RELATIVE);
    }
  });

  it('the whole access check: same time for both, and the registry is asked by key id only', async () => {
    const lookups: string[] = [];
    const registry: KeyRegistry = {
      description: 'spy',
      async lookup(id) {
        lookups.push(id);
        return id === record.id ? record : null;
      },
    };
    const config = resolveAccessConfig({ key_required: { per_ip: { per_minute: 100_000_000 } } }, 'key-required');
    const access = new AccessControl({ config, store: new MemoryQuotaStore(), keys: registry, secret });
    const check = (candidate: string) =>
      access.decide(
        new Request('http://x/api/v1/release', { headers: { Authorization: `Bearer ${candidate}` } }),
        '192.0.2.7',
      );

    expect((await check(key)).denied).toBeNull();
    expect((await check(allButLast)).denied?.status).toBe(401);
    // A well-formed key whose id is not in the registry is checked against a dummy hash: same work.
    const unknownId = flat(
      `isoatlas_${record.id === 'saaaaaaaa' ? 'sbbbbbbbb' : 'saaaaaaaa'}_${key.slice(SECRET_START)}`,
    );
    const seen = await measure(check, [noneRight, allButLast, unknownId]);
    console.log(
      `AccessControl.check paired differences per attempt: ${seen.map((a) => a.map((r) => `${(r * 100).toFixed(1)} %`).join(' / ')).join(', ')}`,
    );
    const [allBut, unknown] = least(seen);
    expect(allBut).toBeLessThan(MAX_RELATIVE);
    expect(unknown).toBeLessThan(MAX_RELATIVE);
    // Every lookup was by the key id; no part of a secret ever reached the registry.
    expect(new Set(lookups)).toEqual(new Set([record.id, keyId(unknownId)]));
  });
});
