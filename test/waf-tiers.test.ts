// Tiers at WAF: the regex patterns that list a tier's keys (edge/cloudfront/tier-patterns.ts) and
// `isoatlas keys publish --waf-tier` writing them through the real SDK client to a WAF stand-in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MAX_REGEX_CHARS, NO_KEYS_PATTERN, tierPatterns } from '../edge/cloudfront/tier-patterns.js';
import { generateKey } from '../edge/access/key-format.js';
import { issueKey, revokeKey } from '../build/keys/registry.js';
import { startFakeKvs, type FakeKvs } from './helpers/fake-kvs.js';
import { startFakeWaf, type FakeWaf } from './helpers/fake-waf.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KVS = 'arn:aws:cloudfront::111111111111:key-value-store/9c0e7d1a-2b3c-4d5e-8f9a-0b1c2d3e4f5a';
const SET_ID = 'a1b2c3d4-5678-90ab-cdef-111111111111';
const SET = `arn:aws:wafv2:us-east-1:111111111111:global/regexpatternset/TierKeysplus-abc/${SET_ID}`;
const AWS_ENV = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'test', AWS_REGION: 'us-east-1', ISOATLAS_KEY_SECRET: '' };

/** What WAF does with a set: lowercase the header (the rule's transformation), then match any pattern. */
const matches = (patterns: string[], authorization: string) => patterns.some((p) => new RegExp(p).test(authorization.toLowerCase()));

describe('tierPatterns', () => {
  it('matches the Bearer header of exactly the listed keys, in any case of the scheme, within WAF\'s length quota', () => {
    const keys = Array.from({ length: 45 }, () => generateKey());
    const listed = keys.slice(0, 30);
    const patterns = tierPatterns(listed.map((k) => k.id));
    expect(patterns).toHaveLength(2);
    for (const p of patterns) expect(p.length).toBeLessThanOrEqual(MAX_REGEX_CHARS);
    for (const k of listed) {
      expect(matches(patterns, `Bearer ${k.key}`)).toBe(true);
      expect(matches(patterns, `bearer  ${k.key}`)).toBe(true);
    }
    for (const k of keys.slice(30)) expect(matches(patterns, `Bearer ${k.key}`)).toBe(false);
    // An id that is only a prefix or suffix of a listed one, or a listed id elsewhere in the header.
    expect(matches(patterns, `Bearer isoatlas_${listed[0].id.slice(1)}_x`)).toBe(false);
    expect(matches(patterns, `Basic isoatlas_${listed[0].id}_x`)).toBe(false);
    expect(tierPatterns([])).toEqual([NO_KEYS_PATTERN]);
    expect(matches([NO_KEYS_PATTERN], `Bearer ${listed[0].key}`)).toBe(false);
  });
});

describe('keys publish --waf-tier', () => {
  let kvs: FakeKvs;
  let waf: FakeWaf;
  let keysDir: string;
  const cli = async (...args: string[]) => {
    try {
      const r = await promisify(execFile)(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], { env: { ...process.env, ...AWS_ENV } });
      return { code: 0, out: r.stdout + r.stderr };
    } catch (err: any) {
      return { code: err.code as number, out: `${err.stdout}${err.stderr}` };
    }
  };
  beforeAll(async () => {
    kvs = await startFakeKvs(KVS);
    waf = await startFakeWaf([{ id: SET_ID, name: 'TierKeysplus-abc' }]);
    keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-waf-'));
  });
  afterAll(async () => {
    await kvs.close();
    await waf.close();
  });

  it('lists the tier\'s keys that are not revoked, and warns about tiers it was not given a set for', async () => {
    const plus = await issueKey(keysDir, { name: 'P', affiliation: 'P', use: 'waf tests', tier: 'plus' });
    const gone = await issueKey(keysDir, { name: 'Q', affiliation: 'Q', use: 'waf tests', tier: 'plus' });
    const standard = await issueKey(keysDir, { name: 'S', affiliation: 'S', use: 'waf tests', tier: 'standard' });
    await revokeKey(keysDir, gone.record.id);
    const args = ['keys', 'publish', '--kvs', KVS, '--endpoint', kvs.url, '--waf-endpoint', waf.url, '--keys-dir', keysDir];
    const r = await cli(...args, '--waf-tier', `plus=${SET}`);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/WAF tier plus: 1 keys/);
    const patterns = waf.sets.get(SET_ID)!.patterns;
    expect(matches(patterns, `Bearer ${plus.key}`)).toBe(true);
    expect(matches(patterns, `Bearer ${gone.key}`)).toBe(false);
    expect(matches(patterns, `Bearer ${standard.key}`)).toBe(false);
    expect((await cli(...args, '--waf-tier', `plus=${SET}`)).out).toMatch(/WAF tier plus: 1 keys \(unchanged\)/);

    const without = await cli(...args);
    expect(without.code, without.out).toBe(0);
    expect(without.out).toMatch(/warning: keys of tier plus are held to the default tier's per-minute limit at WAF until you pass --waf-tier plus=/);
  });

  it('refuses what is not a tier=ARN of a CloudFront-scope regex pattern set', async () => {
    const r = await cli('keys', 'publish', '--kvs', KVS, '--endpoint', kvs.url, '--keys-dir', keysDir, '--waf-tier', 'plus');
    expect(r.code).toBe(2);
    expect(r.out).toMatch(/--waf-tier takes <tier>=<regex pattern set ARN>/);
  });
});
