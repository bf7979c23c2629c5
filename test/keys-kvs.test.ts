// `isoatlas keys publish` into a CloudFront KeyValueStore: the real CLI and SDK client (SigV4A) against
// an in-memory stand-in of the KeyValueStore API, then the key gate run over what was written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { resolveAccessConfig } from '../edge/access/config.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { decodeKeyRecord, encodeKeyRecord, keyEntry, kvsEntries, SECRET_ENTRY } from '../edge/cloudfront/kvs-layout.js';
import { issueKey, loadRegistry, readSecret, revokeKey } from '../build/keys/registry.js';
import { kvsClient, publishKeys } from '../build/keys/commands.js';
import { startFakeKvs, type FakeKvs } from './helpers/fake-kvs.js';
import { loadCloudFrontFunction, viewerRequest } from './helpers/cloudfront-function.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ARN = 'arn:aws:cloudfront::111111111111:key-value-store/0b3d2c54-1a7e-4d6f-9d33-2f1c5a0b9e11';
const AWS_ENV = {
  AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  AWS_REGION: 'us-east-1',
};
let kvs: FakeKvs;
let keysDir: string;

const cli = async (...args: string[]) => {
  try {
    const r = await promisify(execFile)(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], {
      env: { ...process.env, ...AWS_ENV, ISOATLAS_KEY_SECRET: '' },
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err: any) {
    return { code: err.code as number, stdout: err.stdout as string, stderr: err.stderr as string };
  }
};

beforeAll(async () => {
  Object.assign(process.env, AWS_ENV);
  kvs = await startFakeKvs(ARN);
  keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-kvs-'));
});
afterAll(() => kvs.close());

const gate = () =>
  loadCloudFrontFunction(keyGateCode(keyGateSettings(resolveAccessConfig({}, 'key-required'))), kvs.entries);

describe('keys publish --kvs', () => {
  let key: string;
  let id: string;

  it('writes every key and the secret, signed with SigV4A, and the gate then admits the key', async () => {
    ({
      key,
      record: { id },
    } = await issueKey(keysDir, { name: 'A', affiliation: 'B', use: 'tests', tier: 'standard' }));
    await issueKey(keysDir, { name: 'C', affiliation: 'D', use: 'tests', tier: 'plus' });
    const r = await cli('keys', 'publish', '--kvs', ARN, '--endpoint', kvs.url, '--keys-dir', keysDir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(
      /published 2 keys to arn:aws:cloudfront::111111111111:key-value-store\/\S+: 3 written, 0 removed, 0 unchanged/,
    );
    expect(kvs.entries).toEqual(kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!));
    expect(kvs.entries.get(SECRET_ENTRY)).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(kvs.requests.map((q) => q.algorithm))).toEqual(new Set(['AWS4-ECDSA-P256-SHA256']));
    expect((await gate().handler(viewerRequest({ authorization: `Bearer ${key}` }))).statusCode).toBeUndefined();
    // No names, affiliations or uses reach the edge.
    expect([...kvs.entries.values()].join()).not.toMatch(/"name"|tests/);
  });

  it('writes only what changed: a revocation is one write, and the gate refuses the key', async () => {
    await revokeKey(keysDir, id);
    const r = await cli('keys', 'publish', '--kvs', ARN, '--endpoint', kvs.url, '--keys-dir', keysDir);
    expect(r.stdout + r.stderr).toMatch(/1 written, 0 removed, 2 unchanged/);
    const out = await gate().handler(viewerRequest({ authorization: `Bearer ${key}` }));
    expect(out.statusCode).toBe(401);
    expect(out.body.data).toContain('revoked');
  });

  it("keeps the meter's exhaustion marks and entries it did not make, key entries of no registry key too; retries when the store changed under it", async () => {
    const { record } = await issueKey(keysDir, { name: 'E', affiliation: 'F', use: 'tests', tier: 'standard' });
    const other = loadRegistry(keysDir).keys.find((k) => k.tier === 'plus')!;
    const marked = { ...decodeKeyRecord(kvs.entries.get(keyEntry(other.id))!)!, exhausted_until: 1_800_000_000 };
    kvs.entries.set(keyEntry(other.id), encodeKeyRecord(marked));
    kvs.entries.set('someone-else', 'x');
    kvs.entries.set(
      keyEntry('zzzzzzzz'),
      encodeKeyRecord({ hash: '0'.repeat(64), tier: 'standard', revoked_at: null, exhausted_until: 0 }),
    );
    kvs.conflictNext(2);
    const r = await publishKeys(await kvsClient(kvs.url), ARN, keysDir);
    expect(r).toMatchObject({ keys: 3, put: 1, deleted: 0, unchanged: 3, unknown: [keyEntry('zzzzzzzz')] });
    expect(decodeKeyRecord(kvs.entries.get(keyEntry(other.id))!)!.exhausted_until).toBe(1_800_000_000);
    expect(kvs.entries.get('someone-else')).toBe('x');
    expect(kvs.entries.has(keyEntry('zzzzzzzz'))).toBe(true); // not ours to delete: `keys publish` warns
    expect(kvs.entries.has(keyEntry(record.id))).toBe(true);
  });

  it('refuses what is not a KeyValueStore ARN and a directory without a secret, saying what to do', async () => {
    const bad = await cli('keys', 'publish', '--kvs', 'isoatlas-keys', '--keys-dir', keysDir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--kvs must be a KeyValueStore ARN/);
    const empty = await cli(
      'keys',
      'publish',
      '--kvs',
      ARN,
      '--endpoint',
      kvs.url,
      '--keys-dir',
      mkdtempSync(join(tmpdir(), 'isoatlas-nokeys-')),
    );
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/no key secret in .*issue a key first/);
    // WAF reads tiers from key ids now: the pattern-set option is gone, and saying so is the answer.
    const waf = await cli(
      'keys',
      'publish',
      '--kvs',
      ARN,
      '--endpoint',
      kvs.url,
      '--keys-dir',
      keysDir,
      '--waf-tier',
      'plus=arn:aws:wafv2:us-east-1:111111111111:global/regexpatternset/x/y',
    );
    expect(waf.code).toBe(2);
    expect(waf.stderr).toMatch(
      /--waf-tier is no longer needed: WAF reads the tier from the letter in a key id.*drop the option/,
    );
  });

  it('warns about keys of a tier other than the default issued before tiers had letters, and `keys list` marks them legacy', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-legacy-'));
    const legacy = await issueKey(dir, { name: 'Old', affiliation: 'Lab', use: 'tests', tier: 'plus', letter: null });
    await issueKey(dir, { name: 'OldStd', affiliation: 'Lab', use: 'tests', tier: 'standard', letter: null });
    const lettered = await issueKey(dir, { name: 'New', affiliation: 'Lab', use: 'tests', tier: 'plus' });
    const r = await cli('keys', 'publish', '--kvs', ARN, '--endpoint', kvs.url, '--keys-dir', dir);
    expect(r.code, r.stderr).toBe(0);
    // The shared store also holds the other tests' keys, which this registry does not know (a warning of its own).
    const warnings = (r.stdout + r.stderr)
      .split('\n')
      .filter((l) => l.startsWith('warning:') && l.includes('have legacy ids'));
    expect(warnings).toHaveLength(1); // plus only: a legacy standard key is at its own tier's minute limit anyway
    expect(warnings[0]).toContain(`1 key(s) of tier plus have legacy ids without a tier letter (${legacy.record.id})`);
    expect(warnings[0]).toMatch(/issue their holders new keys and revoke these/);
    const list = await cli('keys', 'list', '--keys-dir', dir);
    expect(list.code, list.stderr).toBe(0);
    const row = (id: string) => list.stdout.split('\n').find((l) => l.startsWith(id))!;
    expect(row(legacy.record.id)).toMatch(/^\S+\s+plus\s+legacy\s+active/);
    expect(row(lettered.record.id)).toMatch(/^p\S{8}\s+plus\s+letter p\s+active/);
  });
});
