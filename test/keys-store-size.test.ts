// `isoatlas keys publish` and the KeyValueStore's size: the report, the warning at 80% and the
// refusal at 95% (edge/cloudfront/kvs-capacity.ts), the expiry of revoked keys, and a publish killed
// half-way. The real CLI and SDK client against the in-memory stand-in (test/helpers/fake-kvs.ts),
// registries built synthetically (one file write) and stores filled directly, so a store of tens of
// thousands of keys is read, not written, by the command under test.
import { afterEach, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { resolveAccessConfig, ID_ALPHABET } from '../edge/access/config.js';
import { generateKey } from '../edge/access/key-format.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import {
  CURRENT_RELEASE_ENTRY,
  encodeKeyRecord,
  keyEntry,
  kvsEntries,
  REVOKED_KEY_EXPIRY_DAYS,
  SECRET_ENTRY,
} from '../edge/cloudfront/kvs-layout.js';
import {
  KVS_REFUSE_FRACTION,
  KVS_SIZE_LIMIT_BYTES,
  KVS_WARN_FRACTION,
  keyEntryBytes,
} from '../edge/cloudfront/kvs-capacity.js';
import { issueKey, loadRegistry, readSecret, revokeKey, saveRegistry, type KeyRecord } from '../build/keys/registry.js';
import { kvsClient, publishKeys } from '../build/keys/commands.js';
import { sizeReport, sizeWarning, StoreLedger } from '../build/keys/store-size.js';
import { BadInputError } from '../build/common/errors.js';
import { startFakeKvs, type FakeKvs } from './helpers/fake-kvs.js';
import { loadCloudFrontFunction, viewerRequest } from './helpers/cloudfront-function.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'bin/isoatlas.mjs');
const ARN = 'arn:aws:cloudfront::111111111111:key-value-store/5a1e7c3d-0b9f-4e21-8c6d-3f2a1b0c9d8e';
const AWS_ENV = {
  AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  AWS_REGION: 'us-east-1',
};
const ENV = { ...process.env, ...AWS_ENV, ISOATLAS_KEY_SECRET: '' };
Object.assign(process.env, AWS_ENV);
const DAY_MS = 86_400_000;
/** An active standard key's entry as publish writes it (a lettered id, no day mark). */
const STANDARD_ENTRY_BYTES = 144;
const SECRET_ENTRY_BYTES = SECRET_ENTRY.length + 64;

let kvs: FakeKvs;
afterEach(() => kvs?.close());

const cli = async (...args: string[]) => {
  try {
    const r = await promisify(execFile)(process.execPath, [CLI, ...args], { env: ENV, maxBuffer: 1 << 24 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err: any) {
    return { code: err.code as number, out: `${err.stdout}${err.stderr}` };
  }
};
const publish = (keysDir: string) => cli('keys', 'publish', '--kvs', ARN, '--endpoint', kvs.url, '--keys-dir', keysDir);
const figure = (x: number) => x.toLocaleString('en-US');
const percent = (fraction: number) => (Math.floor(fraction * 1000) / 10).toFixed(1);

/** A registry of `count` active standard keys (ids s + 8 characters, hashes that match no key) and
 * a secret, written at once; `issueKey` adds real ones beside them. */
function syntheticRegistry(count: number): { keysDir: string; records: KeyRecord[] } {
  const keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-kvs-size-'));
  readSecret(keysDir, { create: true });
  const records: KeyRecord[] = [];
  for (let i = 0; i < count; i++) {
    let id = 's';
    for (let n = i, d = 0; d < 8; d++, n = Math.floor(n / 32)) id += ID_ALPHABET[n % 32];
    records.push({
      id,
      hash: createHash('sha256').update(id).digest('hex'),
      tier: 'standard',
      revoked_at: null,
      name: 'N',
      affiliation: 'A',
      use: 'u',
      created_at: '2025-01-01T00:00:00.000Z',
    });
  }
  saveRegistry(keysDir, { version: 1, keys: records });
  return { keysDir, records };
}

/** The store as a publish at `when` left it. */
function storeHolds(keysDir: string, when = new Date()) {
  for (const [k, v] of kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!, when))
    kvs.entries.set(k, v);
}

/** Keys whose entries, each with room for its day mark, bring the store to `fraction` of the limit. */
const keysFor = (fraction: number) =>
  Math.floor((fraction * KVS_SIZE_LIMIT_BYTES - SECRET_ENTRY_BYTES) / keyEntryBytes('standard', false));

const gate = (store: Map<string, string>) =>
  loadCloudFrontFunction(keyGateCode(keyGateSettings(resolveAccessConfig({}, 'key-required'))), store);

describe('keys publish: the store size it reports', () => {
  it("reports the store's entries, bytes and the keys it can still take, counted as the store counts them", async () => {
    // The store counts 20 bytes per entry beyond key and value: publish takes the store's larger count.
    kvs = await startFakeKvs(ARN, { entryOverhead: 20 });
    const { keysDir } = syntheticRegistry(1000);
    storeHolds(keysDir);
    kvs.entries.set('someone-else', 'x'.repeat(1000)); // kept, and counted
    await issueKey(keysDir, { name: 'B', affiliation: 'C', use: 'tests', tier: 'standard' });
    expect(keyEntryBytes('standard', false)).toBe(STANDARD_ENTRY_BYTES + 9); // room for a day mark

    const r = await publish(keysDir);
    expect(r.code, r.out).toBe(0);
    const entries = 1 + 1001 + 1;
    const bytes = SECRET_ENTRY_BYTES + 1001 * STANDARD_ENTRY_BYTES + ('someone-else'.length + 1000) + entries * 20;
    const withMarks = bytes + 1001 * 9;
    const keysLeft = Math.floor((KVS_SIZE_LIMIT_BYTES * KVS_REFUSE_FRACTION - withMarks) / (153 + 20));
    expect(r.out).toContain(
      `key store ${ARN} after this publish: ${figure(entries)} entries, ${figure(bytes)} bytes (the store counts ${figure(bytes)}), ` +
        `${percent(bytes / KVS_SIZE_LIMIT_BYTES)}% of its 5,000,000-byte limit, ` +
        `${percent(withMarks / KVS_SIZE_LIMIT_BYTES)}% with a day mark on every active key; ` +
        `room for ${figure(keysLeft)} more keys before publish adds no keys past 95.0% (a key's entry takes up to 173 bytes, 195 once revoked)`,
    );
    expect(r.out).not.toMatch(/^warning: key store/m);
  });

  it('warns from 80% of the limit, day marks included, naming the store and what to do', async () => {
    kvs = await startFakeKvs(ARN);
    const { keysDir } = syntheticRegistry(keysFor(KVS_WARN_FRACTION)); // and one issued: past the line
    storeHolds(keysDir);
    await issueKey(keysDir, { name: 'B', affiliation: 'C', use: 'tests', tier: 'standard' });
    const r = await publish(keysDir);
    expect(r.code, r.out).toBe(0);
    const warning = r.out.split('\n').find((l) => l.startsWith('warning: key store'));
    expect(warning).toMatch(
      new RegExp(
        `^warning: key store ${ARN} is at 80\\.0% of its 5,000,000-byte limit \\(day marks included\\): publish adds no keys past 95\\.0%, room for [\\d,]+ more\\. ` +
          'Make room before then: revoke keys no longer used \\(`isoatlas keys revoke <id>`, then `keys publish`\\): ' +
          `a revoked key leaves the store ${REVOKED_KEY_EXPIRY_DAYS} days after its revocation`,
      ),
    );
    expect(kvs.entries.size).toBe(loadRegistry(keysDir).keys.length + 1); // the new key was written
  });

  it('the warning starts at 80% exactly: one key less, none (the count publish makes, without the store)', () => {
    const ledger = (keys: number) => {
      const l = new StoreLedger(0, 'standard');
      const value = encodeKeyRecord({ hash: '0'.repeat(64), tier: 'standard', revoked_at: null, exhausted_until: 0 });
      l.add(SECRET_ENTRY, '0'.repeat(64));
      for (let i = 0; i < keys; i++) l.add(keyEntry(`s${String(i).padStart(8, '0')}`), value);
      return l.size();
    };
    const at = ledger(keysFor(KVS_WARN_FRACTION) + 1);
    const under = ledger(keysFor(KVS_WARN_FRACTION));
    expect(at.fraction).toBeGreaterThanOrEqual(KVS_WARN_FRACTION);
    expect(under.fraction).toBeLessThan(KVS_WARN_FRACTION);
    expect(sizeWarning(ARN, at)).toMatch(/is at 80\.0% of its 5,000,000-byte limit/);
    expect(sizeWarning(ARN, under)).toBeNull();
    expect(sizeReport(ARN, under, undefined)).toContain('79.9% with a day mark on every active key');
  });

  it('at 95% adds no more keys (exit 4, naming the store, the keys left out and what to do), yet writes revocations and removals', async () => {
    kvs = await startFakeKvs(ARN);
    const { keysDir, records } = syntheticRegistry(keysFor(KVS_REFUSE_FRACTION) - 2);
    const now = Date.now();
    // One key revoked long ago (its entry leaves), one lately (its entry grows).
    records[0].revoked_at = new Date(now - (REVOKED_KEY_EXPIRY_DAYS + 5) * DAY_MS).toISOString();
    saveRegistry(keysDir, { version: 1, keys: records });
    storeHolds(keysDir, new Date(now - REVOKED_KEY_EXPIRY_DAYS * DAY_MS)); // published before it expired
    records[1].revoked_at = new Date(now - 3 * DAY_MS).toISOString();
    const added = [0, 1, 2, 3].map((i) => `s${'7'.repeat(7)}${ID_ALPHABET[i]}`);
    for (const id of added) records.push({ ...records[2], id, hash: '1'.repeat(64) });
    saveRegistry(keysDir, { version: 1, keys: records });

    const r = await publish(keysDir);
    expect(r.code, r.out).toBe(4);
    const refused = added.filter((id) => !kvs.entries.has(keyEntry(id)));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length).toBeLessThan(added.length); // the room left took the first ones
    expect(r.out).toContain(
      `isoatlas: key store ${ARN} is full: publish adds no keys past 95.0% of its 5,000,000-byte limit, so ${refused.length} new key(s) were not added (${refused.join(', ')}); revocations and removals were written`,
    );
    expect(r.out).toContain(
      'To make room: revoke keys no longer used (`isoatlas keys revoke <id>`, then `keys publish`)',
    );
    const nextExpiry = new Date(Date.parse(records[1].revoked_at) + REVOKED_KEY_EXPIRY_DAYS * DAY_MS);
    expect(r.out).toContain(`(the next 1 leave on ${nextExpiry.toISOString().slice(0, 10)})`);
    expect(r.out).toMatch(/cannot be split over two/);
    // The revocation reached the store; the expired entry left it.
    expect(JSON.parse(kvs.entries.get(keyEntry(records[1].id))!).revoked_at).toBe(records[1].revoked_at);
    expect(kvs.entries.has(keyEntry(records[0].id))).toBe(false);
    expect(r.out).toContain(
      `removed 1 key(s) revoked over ${REVOKED_KEY_EXPIRY_DAYS} days ago from the store: ${records[0].id};`,
    );
  });

  it('names the store and what to do when the store itself refuses a write as over its quota (exit 4)', async () => {
    kvs = await startFakeKvs(ARN, { sizeLimit: 60 * STANDARD_ENTRY_BYTES });
    const { keysDir } = syntheticRegistry(120);
    const r = await publish(keysDir);
    expect(r.code, r.out).toBe(4);
    expect(r.out).toMatch(
      new RegExp(
        `isoatlas: UpdateKeys on key store ${ARN} was refused as over its quota \\(ServiceQuotaExceededException: .*\\); the changes before it were written\\. .*revoke keys no longer used`,
      ),
    );
    expect(kvs.entries.size).toBe(50); // the first call's entries
  });

  it("refuses an entry past AWS's value size, naming it and what to do, before writing anything", async () => {
    kvs = await startFakeKvs(ARN);
    const { keysDir, records } = syntheticRegistry(3);
    records[2].tier = 't'.repeat(1000);
    saveRegistry(keysDir, { version: 1, keys: records });
    const err = await publishKeys(await kvsClient(kvs.url), ARN, keysDir).catch((e) => e);
    expect(err).toBeInstanceOf(BadInputError);
    expect(err.message).toMatch(`the key store entry key:${records[2].id} would take 13 + `);
    expect(err.message).toMatch(/past AWS's limits .*: shorten its tier's name/);
    expect(kvs.entries.size).toBe(0);
  });
});

describe('keys publish: revoked keys leave the store after the expiry', () => {
  it(`keeps a key revoked ${REVOKED_KEY_EXPIRY_DAYS - 1} days ago, removes one revoked ${REVOKED_KEY_EXPIRY_DAYS + 1} days ago; the gate then answers it as any unknown key`, async () => {
    kvs = await startFakeKvs(ARN);
    const keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-kvs-expiry-'));
    const issued = async () => issueKey(keysDir, { name: 'A', affiliation: 'B', use: 'tests', tier: 'standard' });
    const [recent, old, active] = [await issued(), await issued(), await issued()];
    const now = new Date('2030-06-01T12:00:00.000Z');
    await revokeKey(keysDir, recent.record.id, new Date(now.getTime() - (REVOKED_KEY_EXPIRY_DAYS - 1) * DAY_MS));
    await revokeKey(keysDir, old.record.id, new Date(now.getTime() - (REVOKED_KEY_EXPIRY_DAYS + 1) * DAY_MS));
    const client = await kvsClient(kvs.url);
    // Published when both revocations were fresh; entries publish did not make are there too.
    await publishKeys(client, ARN, keysDir, { now: new Date(now.getTime() - 20 * DAY_MS) });
    expect(kvs.entries.has(keyEntry(old.record.id))).toBe(true);
    const stranger = encodeKeyRecord({
      hash: '0'.repeat(64),
      tier: 'standard',
      revoked_at: '2001-01-01T00:00:00.000Z',
      exhausted_until: 0,
    });
    kvs.entries.set(keyEntry('zzzzzzzz'), stranger);
    kvs.entries.set(CURRENT_RELEASE_ENTRY, '2030-05');
    kvs.entries.set('someone-else', 'x');
    const before = gate(new Map(kvs.entries));
    const revokedAnswer = await before.handler(viewerRequest({ authorization: `Bearer ${old.key}` }));
    expect(revokedAnswer.statusCode).toBe(401);
    expect(revokedAnswer.body.data).toContain('revoked');

    const r = await publishKeys(client, ARN, keysDir, { now });
    expect(r.removed).toEqual([keyEntry(old.record.id)]);
    expect(r.unknown).toEqual([keyEntry('zzzzzzzz')]);
    expect(kvs.entries.has(keyEntry(old.record.id))).toBe(false);
    expect(kvs.entries.has(keyEntry(recent.record.id))).toBe(true);
    // Never what it did not make: the secret, the pin, a stranger's entry, a key of no registry of ours.
    expect(kvs.entries.get(keyEntry('zzzzzzzz'))).toBe(stranger);
    expect(kvs.entries.get(CURRENT_RELEASE_ENTRY)).toBe('2030-05');
    expect(kvs.entries.get('someone-else')).toBe('x');
    expect(kvs.entries.get(SECRET_ENTRY)).toBe(readSecret(keysDir, { create: false }));
    // The registry keeps the record, revoked.
    expect(loadRegistry(keysDir).keys.find((k) => k.id === old.record.id)!.revoked_at).not.toBeNull();

    const after = gate(new Map(kvs.entries));
    const expired = await after.handler(viewerRequest({ authorization: `Bearer ${old.key}` }));
    const neverIssued = await after.handler(viewerRequest({ authorization: `Bearer ${generateKey('s').key}` }));
    expect(expired.statusCode).toBe(401);
    expect(expired).toEqual(neverIssued);
    const stillRevoked = await after.handler(viewerRequest({ authorization: `Bearer ${recent.key}` }));
    expect(stillRevoked.body.data).toContain(`the API key ${recent.record.id} was revoked`);
    expect((await after.handler(viewerRequest({ authorization: `Bearer ${active.key}` }))).statusCode).toBeUndefined();
  });

  it('logs what it removes by id only, and `keys list` still shows those keys revoked', async () => {
    kvs = await startFakeKvs(ARN);
    const keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-kvs-expiry-'));
    const { key, record } = await issueKey(keysDir, { name: 'A', affiliation: 'B', use: 'tests', tier: 'standard' });
    await publish(keysDir);
    await revokeKey(keysDir, record.id, new Date(Date.now() - (REVOKED_KEY_EXPIRY_DAYS + 1) * DAY_MS));
    const r = await publish(keysDir);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(
      `removed 1 key(s) revoked over ${REVOKED_KEY_EXPIRY_DAYS} days ago from the store: ${record.id}; the registry keeps them`,
    );
    expect(r.out).toMatch(/0 written, 1 removed, 1 unchanged/); // the secret is unchanged; the key's entry left
    expect(r.out).not.toContain(key.slice(`isoatlas_${record.id}_`.length));
    expect(kvs.entries.has(keyEntry(record.id))).toBe(false);
    const list = await cli('keys', 'list', '--keys-dir', keysDir);
    expect(list.out).toMatch(new RegExp(`^${record.id}\\s+standard\\s+letter s\\s+revoked `, 'm'));
  });
});

describe('keys publish: killed half-way', () => {
  it('leaves the first calls written and the store usable; the next publish writes the rest', async () => {
    kvs = await startFakeKvs(ARN);
    const { keysDir } = syntheticRegistry(120);
    const { key } = await issueKey(keysDir, { name: 'Last', affiliation: 'L', use: 'tests', tier: 'standard' });
    const desired = kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!);

    const held = kvs.holdUpdate(2);
    const child = spawn(
      process.execPath,
      [CLI, 'keys', 'publish', '--kvs', ARN, '--endpoint', kvs.url, '--keys-dir', keysDir],
      {
        env: ENV,
        stdio: 'ignore',
      },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await held; // the first UpdateKeys call was answered, the second is in flight
    child.kill('SIGKILL');
    await exited;
    // One whole call of changes, each as publish means it; nothing of the second.
    expect(kvs.entries.size).toBe(50);
    for (const [k, v] of kvs.entries) expect(v).toBe(desired.get(k));
    expect(kvs.entries.has(SECRET_ENTRY)).toBe(true); // first in the order, so the written keys work

    const r = await publish(keysDir);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`published 121 keys to ${ARN}: 72 written, 0 removed, 50 unchanged`);
    expect(kvs.entries).toEqual(desired);
    expect(
      (await gate(kvs.entries).handler(viewerRequest({ authorization: `Bearer ${key}` }))).statusCode,
    ).toBeUndefined();
  });
});
