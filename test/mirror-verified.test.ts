// The mirror's index of verified objects (a re-sync hashes only what is new or changed on disk), its
// --verify, a damaged index, serve's record of refused objects (a corrupt object is fetched again by
// the next sync), and a sync that says why it waits for a source that refuses it. Small synthetic
// trees behind a counting HTTP server, and the demo tree for the round trip through `isoatlas serve`.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LocalHttpServer } from './helpers/local-http-server.js';
import type http from 'node:http';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { mirror, type MirrorOptions } from '../edge/mirror/mirror.js';
import { VERIFIED_INDEX, VerifiedIndex, stampOf } from '../edge/mirror/verified-index.js';
import { REFUSED_RECORD, RefusedRecord, readRefused, takeRefused } from '../edge/mirror/refused-record.js';
import { VERIFIED_SHARDS } from '../edge/mirror/verified-shards.js';
import { retryAfterSeconds } from '../edge/origins/http-origin.js';
import { writeManifest } from '../build/render/manifest.js';
import { treePaths, type ManifestEntry } from '../edge/contract/tree.js';
import { objectKey } from '../edge/contract/store-layout.js';
import { readAliases, readManifest } from './helpers/tree.js';
import { startServer } from './helpers/server.js';
import { linkObjects } from './helpers/mirror-seed.js';
import { DEFAULT_GRACE_HOURS } from '../build/publish/grace.js';

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** A static server over a directory, counting requests per path; paths can be refused with a status
 * and headers a given number of times. */
class Source extends LocalHttpServer {
  root = '';
  readonly requests = new Map<string, number>();
  readonly refuse = new Map<string, { times: number; status: number; headers: () => Record<string, string> }>();
  protected async answer(req: http.IncomingMessage, res: http.ServerResponse) {
    const path = normalize(decodeURIComponent(new URL(req.url!, 'http://x').pathname)).replace(/^\/+/, '');
    this.requests.set(path, (this.requests.get(path) ?? 0) + 1);
    const refusal = this.refuse.get(path);
    if (refusal && refusal.times > 0) {
      refusal.times--;
      return res.writeHead(refusal.status, refusal.headers()).end();
    }
    if (path.startsWith('..')) return res.writeHead(404).end();
    const body = await readFile(join(this.root, path)).catch(() => null);
    if (body) res.writeHead(200).end(body);
    else res.writeHead(404).end();
  }
}

/** A tree of `n` small files and its manifest; `changed` files get other bytes. */
async function tree(dir: string, release: string, n: number, changed: number[] = []): Promise<ManifestEntry[]> {
  const entries: ManifestEntry[] = [];
  for (let i = 0; i < n; i++) {
    const path = `api/v1/genes/G${String(i).padStart(4, '0')}.json`;
    const body = Buffer.from(JSON.stringify({ gene: i, v: changed.includes(i) ? 2 : 1, pad: 'x'.repeat(i % 50) }));
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), body);
    entries.push({ path, size: body.length, sha256: sha256(body), content_type: 'application/json' });
  }
  await writeManifest(dir, release, entries);
  return entries;
}

/** The objects in a mirror directory, by sha256. */
function objectsIn(dir: string): string[] {
  const root = join(dir, 'objects');
  return readdirSync(root).flatMap((d) =>
    readdirSync(join(root, d))
      .filter((f) => /^[0-9a-f]{62}$/.test(f))
      .map((f) => d + f),
  );
}

/** The records of a mirror's index, from its size: 48 bytes of head and trailer, 64 a record. */
const indexRecords = (dir: string) => (statSync(join(dir, VERIFIED_INDEX)).size - 48) / 64;

let work: string;
let source: Source;
let treeA: string;
let entriesA: ManifestEntry[];
let treeB: string;
let entriesB: ManifestEntry[];
const N = 300;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-mirror-verified-'));
  treeA = join(work, 'tree-a');
  treeB = join(work, 'tree-b');
  entriesA = await tree(treeA, '2026.01', N);
  entriesB = await tree(treeB, '2026.02', N, [7]);
  source = new Source();
  await source.start();
});

afterAll(async () => {
  await source?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

function sync(to: string, more: Partial<MirrorOptions> = {}) {
  const lines: string[] = [];
  return mirror({ from: source.base, to, progress: false, log: (l) => lines.push(l), ...more }).then((s) => ({
    ...s,
    lines,
  }));
}

/** Tree A's files linked in place as objects (test/helpers/mirror-seed.ts), but the ones a test
 * writes into, which are downloaded: after a first sync, the setup of a test whose point comes later. */
function seedA(dir: string, writtenInto: ManifestEntry[] = []) {
  source.root = treeA;
  linkObjects(dir, [treeA], entriesA, new Set(writtenInto.map((e) => e.sha256)));
}

describe('the verified index', () => {
  it('a re-sync trusts what it verified and hashes nothing; after a one-file change it fetches the new objects and hashes none of the old', async () => {
    const dir = join(work, 'm1');
    source.root = treeA;
    const first = await sync(dir);
    const held = objectsIn(dir).length;
    expect(first).toMatchObject({ fetched: held, hashed: 0, trusted: 0 });
    expect(first.lines).toContain(
      `no index of verified objects (${VERIFIED_INDEX}) yet: every object the mirror holds is hashed`,
    );
    expect(indexRecords(dir)).toBe(held);

    const again = await sync(dir);
    expect(again).toMatchObject({ fetched: 0, hashed: 0, trusted: held });
    expect(again.lines.some((l) => l.includes('no index'))).toBe(false);

    source.root = treeB;
    source.requests.clear();
    const changed = await sync(dir);
    expect(source.requests.get(entriesB[7].path)).toBe(1);
    // New: the changed file, the manifest shard listing it, manifest.json.
    expect(changed).toMatchObject({ fetched: 3, hashed: 0, trusted: held });
    expect(changed.releases).toEqual(['2026.01', '2026.02']);
    // The index holds exactly the objects the mirror holds.
    expect(indexRecords(dir)).toBe(objectsIn(dir).length);
    expect(objectsIn(dir).length).toBe(held + 3);

    // Release 2026.01 dropped, then its objects deleted once their grace period ended: the index
    // drops them too.
    await sync(dir, { keep: 1 });
    const later = () => new Date(Date.now() + (DEFAULT_GRACE_HOURS + 1) * 3_600_000);
    const swept = await sync(dir, { keep: 1, now: later });
    expect(swept.removed).toBe(3);
    expect(objectsIn(dir).length).toBe(held);
    expect(indexRecords(dir)).toBe(held);
    expect(await sync(dir, { keep: 1 })).toMatchObject({ hashed: 0, trusted: held });
  });

  it('an object touched, replaced or truncated on disk is hashed again, and fetched again when wrong', async () => {
    const dir = join(work, 'm2');
    const [touched, replaced, truncated] = [entriesA[1], entriesA[2], entriesA[3]];
    seedA(dir, [touched, replaced, truncated]);
    await sync(dir);
    const file = (e: ManifestEntry) => join(dir, objectKey(e.sha256));
    // A whole second, which utimes can put back exactly (a stat has nanoseconds, a JS number not all).
    const second = Math.floor(Date.now() / 1000) - 60;
    utimesSync(file(replaced), second, second);
    expect(await sync(dir)).toMatchObject({ fetched: 0, hashed: 1 });
    // Touched: same bytes, another mtime. Replaced: other bytes of the same size, mtime put back
    // (only its ctime tells). Truncated: fewer bytes.
    utimesSync(file(touched), new Date(), new Date(Date.now() - 3_600_000));
    writeFileSync(file(replaced), Buffer.alloc(replaced.size, 'x'));
    utimesSync(file(replaced), second, second);
    expect(statSync(file(replaced)).mtimeMs).toBe(second * 1000);
    writeFileSync(file(truncated), readFileSync(file(truncated)).subarray(0, 5));
    source.requests.clear();
    const s = await sync(dir);
    // The truncated one fails on its size, unread.
    expect(s).toMatchObject({ fetched: 2, hashed: 2 });
    expect(s.trusted).toBe(objectsIn(dir).length - 3);
    expect(source.requests.get(replaced.path)).toBe(1);
    expect(source.requests.get(truncated.path)).toBe(1);
    expect(source.requests.has(touched.path)).toBe(false);
    for (const e of [touched, replaced, truncated]) expect(sha256(readFileSync(file(e)))).toBe(e.sha256);
    expect((await sync(dir)).hashed).toBe(0);
  });

  it('--verify hashes every object and repairs what the stat cannot see; a damaged index means hashing all, said once, and is written anew', async () => {
    const dir = join(work, 'm3');
    const rotten = entriesA[9];
    seedA(dir, [rotten]);
    await sync(dir);
    const held = objectsIn(dir).length;
    // Damage below the file system: other bytes, and an index that vouches for the file as it is.
    const file = join(dir, objectKey(rotten.sha256));
    writeFileSync(file, Buffer.alloc(rotten.size, 'y'));
    const index = VerifiedIndex.read(dir, () => {});
    index.add(rotten.sha256, stampOf(file)!);
    index.write(dir, (sha) => stampOf(join(dir, objectKey(sha))));
    expect(await sync(dir)).toMatchObject({ fetched: 0, hashed: 0, trusted: held });

    const verified = await sync(dir, { verify: true });
    expect(verified).toMatchObject({ fetched: 1, hashed: held, trusted: 0 });
    expect(sha256(readFileSync(file))).toBe(rotten.sha256);
    expect(indexRecords(dir)).toBe(held);

    for (const damage of [
      (b: Buffer) => {
        b[100] ^= 1;
        return b;
      },
      (b: Buffer) => b.subarray(0, b.length - 10),
      () => Buffer.from('not an index'),
    ]) {
      writeFileSync(join(dir, VERIFIED_INDEX), damage(readFileSync(join(dir, VERIFIED_INDEX))));
      const s = await sync(dir);
      expect(s).toMatchObject({ fetched: 0, hashed: held, trusted: 0 });
      expect(s.lines.filter((l) => l.includes('is damaged'))).toEqual([
        `${join(dir, VERIFIED_INDEX)} is damaged: every object the mirror holds is hashed, and the index is written anew`,
      ]);
      expect(await sync(dir)).toMatchObject({ hashed: 0, trusted: held });
    }
  });
});

describe('the record of shards held whole', () => {
  const shardsOf = (tree: string) => readManifest(tree).index.shards.length;

  it('a re-sync reads no shard it holds whole; a file missing or changed on disk, a damaged record or --verify means reading every shard, and the record is written anew', async () => {
    const dir = join(work, 'm5');
    seedA(dir);
    const shards = shardsOf(treeA);
    expect(await sync(dir)).toMatchObject({ unchanged: 0 });
    expect(existsSync(join(dir, VERIFIED_SHARDS))).toBe(true);
    const held = objectsIn(dir).length;
    source.requests.clear();
    // Only manifest.json is looked at (held, checked); every object is trusted after its stat.
    expect(await sync(dir)).toMatchObject({ unchanged: shards, fetched: 0, reused: 1, hashed: 0, trusted: held });
    expect([...source.requests.keys()]).toEqual(['current.json', 'manifest.json']);

    // Deleted by hand: the stat of every indexed object finds it, the record is set aside, every
    // shard is read, and the file is fetched again.
    const gone = entriesA[5];
    rmSync(join(dir, objectKey(gone.sha256)));
    const repaired = await sync(dir);
    expect(repaired).toMatchObject({ unchanged: 0, fetched: 1 });
    expect(repaired.lines).toContain(
      `object ${objectKey(gone.sha256)} is missing or changed on disk since the last sync: every manifest shard is read again, and what it lists checked`,
    );
    expect(sha256(readFileSync(join(dir, objectKey(gone.sha256))))).toBe(gone.sha256);
    expect(await sync(dir)).toMatchObject({ unchanged: shards, fetched: 0 });

    // A sync that stops after finding the change leaves no record behind: the next one reads every
    // shard too (an index without the missing file's record must not let the old record vouch for it).
    rmSync(join(dir, objectKey(gone.sha256)));
    source.refuse.set(gone.path, { times: 4, status: 404, headers: () => ({}) });
    await expect(sync(dir)).rejects.toThrow(/not found at/);
    expect(existsSync(join(dir, VERIFIED_SHARDS))).toBe(false);
    source.refuse.clear();
    expect(await sync(dir)).toMatchObject({ unchanged: 0, fetched: 1 });

    const record = join(dir, VERIFIED_SHARDS);
    writeFileSync(
      record,
      readFileSync(record, 'latin1').replace(/[0-9a-f]/, (c) => (c === '0' ? '1' : '0')),
    );
    const damaged = await sync(dir);
    expect(damaged).toMatchObject({ unchanged: 0, fetched: 0, hashed: 0 });
    expect(damaged.lines).toContain(
      `${record} is damaged: every manifest shard is read, and the record is written anew`,
    );
    expect(await sync(dir)).toMatchObject({ unchanged: shards });

    expect(await sync(dir, { verify: true })).toMatchObject({ unchanged: 0, hashed: held });
    expect(await sync(dir)).toMatchObject({ unchanged: shards, hashed: 0 });
  });

  it('a record of shards whose files are not all in the verified index is not trusted', async () => {
    const dir = join(work, 'm6');
    seedA(dir);
    await sync(dir);
    const shards = shardsOf(treeA);
    expect(await sync(dir)).toMatchObject({ unchanged: shards });
    // The index gone (deleted to make the mirror hash everything): the record goes with it.
    rmSync(join(dir, VERIFIED_INDEX));
    expect(await sync(dir)).toMatchObject({ unchanged: 0, hashed: objectsIn(dir).length });
    expect(await sync(dir)).toMatchObject({ unchanged: shards, hashed: 0 });
  });
});

describe('objects refused by `isoatlas serve`', () => {
  it('a corrupt object is answered 502 and noted; the next sync fetches it again; then it is served', async () => {
    const demo = inject('fixtureTree');
    const dir = join(work, 'm-demo');
    source.root = demo;
    // The demo's files put in place as objects beforehand, so the sync hashes them rather than
    // download them all: a mirror in seconds.
    const { index: demoIndex, entries: demoEntries } = readManifest(demo);
    for (const e of [...demoIndex.shards, ...demoEntries]) {
      mkdirSync(dirname(join(dir, objectKey(e.sha256))), { recursive: true });
      copyFileSync(join(demo, e.path), join(dir, objectKey(e.sha256)));
    }
    expect(await sync(dir)).toMatchObject({ fetched: 1, trusted: 0 });
    const prr5 = readAliases(demo).genes.prr5 as string;
    const entry = demoEntries.find((e) => e.path === treePaths.gene(prr5))!;
    const file = join(dir, objectKey(entry.sha256));
    // Rot: other bytes in place, same size and mtime, which the index still vouches for (a bad disk
    // changes no stat; a write through the file system changes its ctime, which the index sees).
    const { atime, mtime } = statSync(file);
    const good = readFileSync(file);
    const bad = Buffer.from(good);
    bad[10] ^= 0x20;
    writeFileSync(file, bad);
    utimesSync(file, atime, mtime);
    const index = VerifiedIndex.read(dir, () => {});
    index.add(entry.sha256, stampOf(file)!);
    index.write(dir, (sha) => stampOf(join(dir, objectKey(sha))));

    // The file of the release, and the object as served to mirrors downstream.
    const paths = [`/api/v1/genes/${prr5}`, `/${objectKey(entry.sha256)}`];
    const get = async () => {
      const server = await startServer({ dir, extraArgs: ['--keys-dir', join(work, 'keys')] });
      try {
        const answers: { status: number; body: string }[] = [];
        for (const path of paths) {
          const res = await fetch(`${server.base}${path}`);
          answers.push({ status: res.status, body: await res.text() });
        }
        return answers;
      } finally {
        await server.stop();
      }
    };
    expect((await get()).map((a) => a.status)).toEqual([502, 502]);
    // Noted once, whichever way it was asked for.
    expect(readFileSync(join(dir, REFUSED_RECORD), 'utf8')).toBe(`${entry.sha256}\n`);

    source.requests.clear();
    const s = await sync(dir);
    expect(s).toMatchObject({ fetched: 1, hashed: 1 });
    expect(s.lines).toContain(
      '1 object refused by `isoatlas serve` since the last sync: hashed again, fetched again if corrupt',
    );
    expect(source.requests.get(entry.path)).toBe(1);
    expect(existsSync(join(dir, REFUSED_RECORD))).toBe(false);
    expect(await get()).toEqual([
      { status: 200, body: good.toString('utf8') },
      { status: 200, body: good.toString('utf8') },
    ]);

    // Asked for only as an object (by a mirror downstream), it is noted too.
    writeFileSync(file, bad);
    paths.splice(0, 1);
    expect((await get()).map((a) => a.status)).toEqual([502]);
    expect(readFileSync(join(dir, REFUSED_RECORD), 'utf8')).toBe(`${entry.sha256}\n`);
  });

  it('serve notes each refused object once until a sync takes the record; a directory it cannot write to is said once, never thrown', () => {
    const dir = join(work, 'record');
    mkdirSync(dir);
    const warned: string[] = [];
    const record = new RefusedRecord(dir, (l) => warned.push(l));
    const [a, b] = [sha256('a'), sha256('b')];
    record.note(a);
    record.note(a);
    record.note(b);
    record.note('not a sha256');
    expect(readFileSync(join(dir, REFUSED_RECORD), 'utf8')).toBe(`${a}\n${b}\n`);
    expect([...readRefused(dir)]).toEqual([a, b]);
    // The sync checked `a` only: `b` stays for the next one; `a` refused again is news.
    takeRefused(dir, (sha) => sha === a);
    expect(readFileSync(join(dir, REFUSED_RECORD), 'utf8')).toBe(`${b}\n`);
    takeRefused(dir, () => true);
    expect(existsSync(join(dir, REFUSED_RECORD))).toBe(false);
    record.note(a);
    expect(readFileSync(join(dir, REFUSED_RECORD), 'utf8')).toBe(`${a}\n`);
    expect(warned).toEqual([]);

    const nowhere = new RefusedRecord(join(work, 'no-such-dir'), (l) => warned.push(l));
    expect(() => [a, b].forEach((sha) => nowhere.note(sha))).not.toThrow();
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(
      /^cannot note refused objects in .*refused-objects\.txt \(ENOENT\): the next sync will not know/,
    );
  });
});

describe('a source that refuses', () => {
  it('is waited for as its Retry-After says (seconds or a date), and the wait is said with its reason', async () => {
    const dir = join(work, 'm-busy');
    seedA(dir, [entriesA[0]]);
    const waits: number[] = [];
    source.refuse.set('current.json', { times: 1, status: 429, headers: () => ({ 'Retry-After': '37' }) });
    source.refuse.set(treePaths.manifest, {
      times: 1,
      status: 503,
      headers: () => ({ 'Retry-After': new Date(Date.now() + 30_000).toUTCString() }),
    });
    source.refuse.set(entriesA[0].path, { times: 2, status: 429, headers: () => ({}) });
    const s = await sync(dir, { concurrency: 1, sleep: async (ms) => void waits.push(ms) });
    expect(waits[0]).toBe(37_000);
    // An HTTP date, to the second: between 29 and 31 s from when it was written.
    expect(waits[1]).toBeGreaterThanOrEqual(29_000);
    expect(waits[1]).toBeLessThanOrEqual(31_000);
    // No Retry-After: a growing backoff.
    expect(waits.slice(2)).toEqual([2_000, 4_000]);
    const waiting = s.lines.filter((l) => l.startsWith('waiting'));
    expect(waiting[0]).toBe('waiting 37 s: the source limits this address (429, Retry-After 37)');
    expect(waiting[1]).toMatch(/^waiting (29|30|31) s: the source is busy \(503, Retry-After (29|30|31)\)$/);
    expect(waiting.slice(2)).toEqual([
      'waiting 2 s: the source limits this address (429, no Retry-After: waiting longer each time)',
      'waiting 4 s: the source limits this address (429, no Retry-After: waiting longer each time)',
    ]);
    expect(s.waited).toBe(4);
    expect(s.waitedSeconds).toBeCloseTo(waits.reduce((a, b) => a + b, 0) / 1000, 0);
    expect(s.lines.at(-1)).toMatch(/\(the source refused 4 times: waited \d+ s\)/);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-26T08:00:00Z');
    expect(retryAfterSeconds('37', now)).toBe(37);
    expect(retryAfterSeconds('Thu, 26 Nov 2026 08:00:45 GMT', now)).toBe(45);
    expect(retryAfterSeconds('Thu, 26 Nov 2026 07:59:00 GMT', now)).toBe(0);
    for (const v of [null, '', 'soon', '-5', '1.5']) expect(retryAfterSeconds(v, now), String(v)).toBeUndefined();
  });
});
