// Publish's on-disk ledger (build/publish/publish-ledger.ts): the release's distinct objects in the
// order packs are cut from (shard objects first, then files at their first path), what the store
// lacks as the tree less what it holds for sure, every row read back once in pages, a pending file
// taken once; and its scratch file, which publish always removes, on success and on failure.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PublishLedger } from '../build/publish/publish-ledger.js';
import { publish } from '../build/publish/publish.js';
import { writeManifest } from '../build/render/manifest.js';
import { contentTypeOf, treePaths, type ManifestEntry } from '../edge/contract/tree.js';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { ReleaseStore } from '../edge/store/release-store.js';

const sha = (n: number) => n.toString(16).padStart(64, '0');
const file = (path: string, n: number, size = n): ManifestEntry => ({
  path,
  size,
  sha256: sha(n),
  content_type: contentTypeOf(path),
});
const shardEntry = (i: number, n: number): ManifestEntry => ({ ...file(`manifest/${i}.json`, n), content_type: '' });

describe('the publish ledger', () => {
  it('lists shard objects first (each once, in manifest order), then each file once at its first path; missing is the tree less what the store holds', () => {
    const ledger = new PublishLedger();
    try {
      expect(ledger.addTreeShard(0, [file('b/2.json', 2), file('d/same.json', 5)])).toBeNull();
      expect(
        ledger.addTreeShard(1, [file('a/1.json', 1), file('c/same.json', 5), file('e/shard.json', 900)]),
      ).toBeNull();
      // A path listed twice in its shard is named, not recorded twice. (A path always hashes to one
      // shard: the manifest reader refuses one listed in another before the ledger sees it.)
      expect(ledger.addTreeShard(1, [file('a/1.json', 1)])).toBe('a/1.json');
      ledger.addManifestObjects(1, [shardEntry(1, 901), shardEntry(1, 900)]);
      ledger.addManifestObjects(0, [shardEntry(0, 902), shardEntry(0, 901)]);
      ledger.fixObjects();
      ledger.know([sha(2), sha(901)]);
      ledger.markMissing();
      const all = [...ledger.objects()].flat();
      expect(all.map((o) => [o.sha256, o.path, o.kind])).toEqual([
        [sha(902), 'manifest/0.json', 'shard'],
        [sha(901), 'manifest/0.json', 'shard'],
        [sha(900), 'manifest/1.json', 'shard'],
        [sha(1), 'a/1.json', 'file'],
        [sha(2), 'b/2.json', 'file'],
        [sha(5), 'c/same.json', 'file'],
      ]);
      expect(all[0].content_type).toBe(contentTypeOf('manifest/0.json'));
      expect([...ledger.objects({ missing: true })].flat().map((o) => o.sha256)).toEqual([
        sha(902),
        sha(900),
        sha(1),
        sha(5),
      ]);
      expect([...ledger.objects({ kind: 'file', missing: true })].flat().map((o) => o.path)).toEqual([
        'a/1.json',
        'c/same.json',
      ]);
      expect(ledger.missingCount('file')).toBe(2);
      expect(ledger.treeShard(1).map((e) => e.path)).toEqual(['a/1.json', 'c/same.json', 'e/shard.json']);
      // What the store holds for sure now, not when the objects were fixed.
      ledger.know([sha(1)]);
      expect([...ledger.objects({ unknown: true })].flat().map((o) => o.sha256)).toEqual([sha(902), sha(900), sha(5)]);
    } finally {
      ledger.close();
    }
  });

  it('reads every object back once, in order, across many pages; pending is what neither the kept releases nor a listing hold', () => {
    const ledger = new PublishLedger();
    try {
      const n = 5_000;
      const entries = Array.from({ length: n }, (_, i) => file(`f/${String(i).padStart(5, '0')}.json`, i + 1));
      ledger.addTreeShard(0, entries.slice(0, 2_500));
      ledger.addTreeShard(1, entries.slice(2_500));
      ledger.fixObjects();
      ledger.know(entries.filter((_, i) => i % 3 === 0).map((e) => e.sha256));
      ledger.markMissing();
      const pages = [...ledger.objects()];
      expect(pages.length).toBeGreaterThan(1);
      expect(pages.flat().map((o) => o.path)).toEqual(entries.map((e) => e.path));
      // A listing of the store found one more (an earlier run's upload): missing still, not pending.
      ledger.listedInStore('object', [sha(2)]);
      expect(ledger.markPending()).toBe(entries.filter((_, i) => i % 3 !== 0).length - 1);
      expect(ledger.missingCount()).toBe(entries.filter((_, i) => i % 3 !== 0).length);
      const left = [...ledger.pendingObjects('file')].flat().map((o) => o.sha256);
      expect(left).toHaveLength(entries.filter((_, i) => i % 3 !== 0).length - 1);
      expect(left).not.toContain(sha(2));
      expect(left).not.toContain(sha(1)); // held by the store: never pending
      ledger.uploaded('file');
      expect(ledger.pendingCount()).toBe(0);
    } finally {
      ledger.close();
    }
  });

  it('gives a shard recorded in two parts back whole, whether or not it keeps it parsed, as the build lists it', () => {
    const ledger = new PublishLedger();
    try {
      // An entry without a content type (a tree of an earlier format) comes back without one.
      const { content_type: _, ...untyped } = file('b/2.json', 2);
      ledger.addTreeShard(0, [file('a/1.json', 1)]);
      ledger.addTreeShard(0, [untyped as ManifestEntry]);
      ledger.addTreeShard(1, [file('c/3.json', 3)]);
      // Read back from the ledger, not kept parsed: in the build's member order, as a delta lists it.
      expect(JSON.stringify(ledger.treeShard(0))).toBe(JSON.stringify([file('a/1.json', 1), untyped]));
      expect(ledger.treeShard(1)).toEqual([file('c/3.json', 3)]);
    } finally {
      ledger.close();
    }
  });

  it('records a long shard whole, and names the first path it lists twice wherever that falls in it', () => {
    // Past several batches of rows (publish-ledger.ts records a shard's first rows many at a time).
    const entries = Array.from({ length: 300 }, (_, i) => file(`p/${String(i).padStart(4, '0')}.json`, i + 1));
    for (const at of [1, 63, 64, 65, 130, 300]) {
      const ledger = new PublishLedger();
      try {
        // entries[at - 1] listed again right after itself: that copy is the first path listed twice.
        const twice = [...entries.slice(0, at), entries[at - 1], ...entries.slice(at)];
        expect(ledger.addTreeShard(2, twice), `listed again at ${at}`).toBe(entries[at - 1].path);
      } finally {
        ledger.close();
      }
    }
    const ledger = new PublishLedger();
    try {
      expect(ledger.addTreeShard(3, entries)).toBeNull();
      ledger.fixObjects();
      expect([...ledger.objects()].flat().map((o) => [o.path, o.sha256])).toEqual(
        entries.map((e) => [e.path, e.sha256]),
      );
    } finally {
      ledger.close();
    }
  });

  it('gives back the bytes of every manifest object it keeps, the first kept for a sha256, past what it holds in memory', () => {
    // A budget of 40 KiB: the first body is kept in memory, the next go to the ledger's file.
    const ledger = new PublishLedger({ bodyBytes: 40 * 1024 });
    try {
      const bodies = [1, 2, 3].map((n) => Buffer.alloc(20 * 1024 + n, n));
      bodies.forEach((b, i) => ledger.keepBody(sha(i + 1), b));
      ledger.keepBody(sha(1), Buffer.from('another body'));
      ledger.keepBody(sha(3), Buffer.from('another body'));
      bodies.forEach((b, i) => expect(ledger.body(sha(i + 1))?.equals(b)).toBe(true));
      expect(ledger.body(sha(4))).toBeNull();
    } finally {
      ledger.close();
    }
  });

  it("counts a manifest read whole (its heads, their bases and files) as held by the store, and none of one it forgot or the tree's", () => {
    const ledger = new PublishLedger();
    try {
      const manifest = sha(100);
      ledger.recordHead(sha(10), [sha(11), sha(1), sha(2)]);
      ledger.recordHead(sha(20), [sha(3)]);
      // The tree's own head with a chain: what it lists is not in the store for that.
      ledger.recordHead(sha(30), [sha(31), sha(4)], true);
      expect(ledger.knowRecorded(manifest, [sha(10), sha(20)])).toBe(false);
      ledger.recordedWhole(manifest);
      expect(ledger.knowRecorded(sha(101), [sha(10), sha(20)])).toBe(false);
      expect([1, 2, 3, 4, 10, 11, 20, 30, 31, 100, 101].filter((n) => ledger.isKnown(sha(n)))).toEqual([]);
      expect(ledger.knowRecorded(manifest, [sha(10), sha(20)])).toBe(true);
      expect([1, 2, 3, 4, 10, 11, 20, 30, 31, 100, 101].filter((n) => ledger.isKnown(sha(n)))).toEqual([
        1, 2, 3, 10, 11, 20, 100,
      ]);
      // A read that failed part-way forgets the manifest: nothing of it counts.
      const other = new PublishLedger();
      try {
        other.recordHead(sha(10), [sha(11), sha(1)]);
        other.recordedWhole(manifest);
        other.forgetCurrentRelease();
        expect(other.knowRecorded(manifest, [sha(10)])).toBe(false);
        expect(other.isKnown(sha(1))).toBe(false);
      } finally {
        other.close();
      }
    } finally {
      ledger.close();
    }
  });
});

describe("publish's scratch ledger", () => {
  let root: string;
  let scratch: string;
  let tmpBefore: string | undefined;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'isoatlas-publish-ledger-'));
    scratch = join(root, 'tmp');
    mkdirSync(scratch);
    // os.tmpdir() reads TMPDIR on each call: publish's scratch directory goes here, watched alone.
    tmpBefore = process.env.TMPDIR;
    process.env.TMPDIR = scratch;
    const entries: ManifestEntry[] = [];
    for (let i = 0; i < 20; i++) {
      const path = `api/v1/genes/G${i}.json`;
      const body = Buffer.from(JSON.stringify({ i }));
      mkdirSync(dirname(join(root, 'tree', path)), { recursive: true });
      writeFileSync(join(root, 'tree', path), body);
      entries.push({
        path,
        size: body.length,
        sha256: createHash('sha256').update(body).digest('hex'),
        content_type: contentTypeOf(path),
      });
    }
    const release = Buffer.from(JSON.stringify({ release: 'r1' }));
    writeFileSync(join(root, 'tree', treePaths.release), release);
    entries.push({
      path: treePaths.release,
      size: release.length,
      sha256: createHash('sha256').update(release).digest('hex'),
      content_type: contentTypeOf(treePaths.release),
    });
    await writeManifest(join(root, 'tree'), 'r1', entries);
  });
  afterAll(() => {
    if (tmpBefore === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpBefore;
    rmSync(root, { recursive: true, force: true });
  });

  /** A store that notes, at its first write, the scratch directories publish has open. */
  const watchedStore = (name: string, fail: boolean) => {
    const backend = new DirectoryBackend(join(root, name));
    const seen: string[][] = [];
    const write = backend.write.bind(backend);
    backend.write = async (...args: Parameters<typeof write>) => {
      seen.push(readdirSync(scratch));
      if (fail) throw new Error('the store is gone');
      return write(...args);
    };
    return { store: new ReleaseStore(backend), seen };
  };

  it('is removed after a publish that succeeds', async () => {
    const { store, seen } = watchedStore('ok', false);
    const summary = await publish({ dir: join(root, 'tree'), store, progress: false });
    expect(summary.uploaded).toBe(summary.objects);
    expect(seen[0]).toEqual([expect.stringMatching(/^isoatlas-publish-/)]);
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('is removed after a publish that fails', async () => {
    const { store, seen } = watchedStore('failing', true);
    await expect(publish({ dir: join(root, 'tree'), store, progress: false })).rejects.toThrow('the store is gone');
    expect(seen[0]).toEqual([expect.stringMatching(/^isoatlas-publish-/)]);
    expect(readdirSync(scratch)).toEqual([]);
  });
});
