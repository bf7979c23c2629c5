// Manifests that grow with the change (#33 item 4): publish writes each manifest shard as a delta on
// the current release's (build/publish/manifest-encoding.ts), and every reader resolves the chains.
// Over a store in a directory: a long series of releases each changing 1% of files spread over paths
// rewrites at most 10% of the manifest's bytes in every publish, every release reads back exactly
// its tree's files (through the manifest reader and through the edge), a corrupted base is refused,
// a new shard count writes full shards, and gc keeps every base a kept release needs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { IntegrityError, VerifiedOrigin } from '../edge/origins/verified.js';
import { publish } from '../build/publish/publish.js';
import { collectGarbage } from '../build/publish/collect.js';
import { writeManifest } from '../build/render/manifest.js';
import { loadManifest, type LoadedManifest } from '../build/common/manifest-reader.js';
import { BadInputError } from '../build/common/errors.js';
import {
  MAX_CHAIN,
  indexShardObject,
  lookupChain,
  parseShardObject,
  resolveChain,
  type ShardObject,
} from '../edge/contract/manifest.js';
import { shardOf } from '../edge/contract/shards.js';
import { contentTypeOf, treePaths, type ManifestEntry } from '../edge/contract/tree.js';
import { objectKey } from '../edge/contract/store-layout.js';
import type { HandlerLog } from '../edge/handler-log.js';
import { mirror } from '../edge/mirror/mirror.js';
import { startServer } from './helpers/server.js';

const quiet: HandlerLog = { info() {}, warn() {}, error() {} };
const sha256Of = (body: string | Buffer) => createHash('sha256').update(body).digest('hex');

/** A synthetic tree in `dir`: files by path → body, and its manifest (shards as render writes them). */
class SyntheticTree {
  readonly files = new Map<string, string>();
  private readonly made = new Set<string>();
  /** sha256 by body: most files share one. */
  private readonly shas = new Map<string, string>();
  constructor(readonly dir: string) {}
  private parent(path: string) {
    const parent = dirname(join(this.dir, path));
    if (!this.made.has(parent)) mkdirSync(parent, { recursive: true });
    this.made.add(parent);
  }
  /** A file of its own; one that was there is replaced, not written into (it may be a hard link). */
  put(path: string, body: string) {
    this.parent(path);
    if (this.files.has(path)) rmSync(join(this.dir, path));
    writeFileSync(join(this.dir, path), body);
    this.files.set(path, body);
  }
  /** New files with one body: the first written, the others hard links to it (cheaper to make and
   * remove than files of their own). */
  putAll(paths: readonly string[], body: string) {
    const [head, ...rest] = paths;
    this.put(head, body);
    for (const path of rest) {
      this.parent(path);
      linkSync(join(this.dir, head), join(this.dir, path));
      this.files.set(path, body);
    }
  }
  remove(path: string) {
    rmSync(join(this.dir, path));
    this.files.delete(path);
  }
  private sha(body: string) {
    let sha = this.shas.get(body);
    if (sha === undefined) this.shas.set(body, (sha = sha256Of(body)));
    return sha;
  }
  entries(): ManifestEntry[] {
    return [...this.files]
      .map(([path, body]) => ({
        path,
        size: Buffer.byteLength(body),
        sha256: this.sha(body),
        content_type: contentTypeOf(path),
      }))
      .sort((a, b) => (a.path < b.path ? -1 : 1));
  }
  /** Writes the manifest for `release`; returns the bytes of the whole manifest and its entries. */
  async render(release: string): Promise<{ fullBytes: number; entries: ManifestEntry[] }> {
    rmSync(join(this.dir, 'manifest'), { recursive: true, force: true });
    const entries = this.entries();
    const { index } = await writeManifest(this.dir, release, entries);
    const fullBytes =
      readFileSync(join(this.dir, treePaths.manifest)).length + index.shards.reduce((n, s) => n + s.size, 0);
    return { fullBytes, entries };
  }
}

const pathOf = (i: number) => `api/v1/isoforms/ENST${String(i).padStart(11, '0')}.1.json`;
/** Unchanged files share one body (one object to upload); a changed one has its own. */
const bodyOf = (i: number, version: number) =>
  version === 0 ? '{"version":0}' : `{"transcript_id":"ENST${i}","version":${version}}`;

let root: string;
let store: ReleaseStore;
const storeDir = () => join(root, 'store');
const readStore = (manifestSha: string) => async (path: string, listed?: ManifestEntry) =>
  (await store.get(objectKey(path === treePaths.manifest ? manifestSha : listed!.sha256)))?.body ?? null;
const loadRelease = async (release: string): Promise<LoadedManifest> => {
  const h = await store.history();
  const r = [...h.releases, ...h.retired].find((x) => x.release === release)!;
  return loadManifest(readStore(r.manifest_sha256), `store (release ${release}) `);
};
/** An edge reading a release of the store, every file checked against the manifest. */
const edge = async (release?: string) => {
  const pinned = await new StoreOrigin(store.backend, 0).pin(release);
  return new VerifiedOrigin(pinned!.files, { log: quiet });
};

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'isoatlas-manifest-delta-'));
  store = new ReleaseStore(new DirectoryBackend(storeDir()));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the delta format', () => {
  const entry = (i: number, v = 0): ManifestEntry => {
    const body = bodyOf(i, v);
    return { path: pathOf(i), size: body.length, sha256: sha256Of(body), content_type: 'application/json' };
  };
  // Shard 0 of 2: the paths that hash there.
  const ours = Array.from({ length: 40 }, (_, i) => i).filter((i) => shardOf(pathOf(i), 2) === 0);
  const bytes = (o: object) => Buffer.from(JSON.stringify(o));
  const ref = (o: object) => ({ sha256: sha256Of(bytes(o)), size: bytes(o).length });
  const full = { entries: ours.slice(0, 6).map((i) => entry(i)) };
  const d1 = { entries: [entry(ours[1], 1), entry(ours[7])], removed: [pathOf(ours[2])], bases: [ref(full)] };
  const d2 = { entries: [entry(ours[2])], removed: [pathOf(ours[7])], bases: [ref(d1), ref(full)] };
  const parsed = (o: object, deltas = true) => parseShardObject(bytes(o), 0, 2, 'shard', deltas);

  it('resolves a chain oldest first: removed paths dropped, entries put; a lookup agrees', () => {
    const chain: ShardObject[] = [parsed(d2), parsed(d1), parsed(full)];
    const resolved = resolveChain(chain[0], chain.slice(1), 'shard');
    const want = [entry(ours[0]), entry(ours[1], 1), entry(ours[2]), ...ours.slice(3, 6).map((i) => entry(i))].sort(
      (a, b) => (a.path < b.path ? -1 : 1),
    );
    expect(resolved).toEqual(want);
    const indexed = chain.map(indexShardObject);
    for (const i of ours.slice(0, 9))
      expect(lookupChain(indexed, pathOf(i)), pathOf(i)).toEqual(want.find((e) => e.path === pathOf(i)) ?? null);
    // One step back: ours[2] removed, ours[7] added.
    const one = resolveChain(parsed(d1), [parsed(full)], 'shard').map((e) => e.path);
    expect(one).toContain(pathOf(ours[7]));
    expect(one).not.toContain(pathOf(ours[2]));
  });

  it('refuses malformed deltas and chains that do not continue', () => {
    expect(() => parsed(d1, false)).toThrow(/delta shard in a manifest of format 2/);
    expect(() => parsed({ ...d1, entries: [...d1.entries].reverse() })).toThrow(/sorted by path/);
    expect(() => parsed({ ...d1, removed: [pathOf(ours[7])] })).toThrow(/both removed and listed/);
    expect(() => parsed({ ...d1, bases: [] })).toThrow(/1 to 16 distinct bases/);
    const many = Array.from({ length: MAX_CHAIN + 1 }, (_, k) => ({ sha256: sha256Of(String(k)), size: 1 }));
    expect(() => parsed({ ...d1, bases: many })).toThrow(/1 to 16 distinct bases/);
    const other = ours.length < 40 ? Array.from({ length: 40 }, (_, i) => i).find((i) => !ours.includes(i))! : 0;
    expect(() => parsed({ ...d1, removed: [pathOf(other)] })).toThrow(/belongs to another shard/);
    // d2 lists d1 then full; given full as its first base, the chain does not continue.
    expect(() => resolveChain(parsed(d2), [parsed(full), parsed(d1)], 'shard')).toThrow(/does not continue its chain/);
    expect(() => resolveChain(parsed(d2), [parsed(d1)], 'shard')).toThrow(/1 bases for 2 listed/);
  });
});

describe('a series of releases, each changing 1% of files', () => {
  // 16 shards of about 560 entries: the smallest shard count for which the bound holds (see
  // docs/ARCHITECTURE.md), and small enough to write in a second.
  const FILES = 9000;
  const RELEASES = 21;
  const KEEP = 4;
  let tree: SyntheticTree;
  const expected = new Map<string, ManifestEntry[]>();
  const versions = new Map<number, number>();

  it('every publish rewrites at most 10% of the manifest, chains stay within MAX_CHAIN, and each release reads back exactly', async () => {
    tree = new SyntheticTree(join(root, 'tree'));
    const paths = Array.from({ length: FILES }, (_, i) => pathOf(i));
    // Every file's first version is the same body: one file, linked.
    expect(new Set(paths.map((_, i) => bodyOf(i, 0)))).toEqual(new Set([bodyOf(0, 0)]));
    tree.putAll(paths, bodyOf(0, 0));
    let next = FILES;
    const first = await tree.render('r00');
    expect(JSON.parse(readFileSync(join(tree.dir, treePaths.manifest), 'utf8')).shards).toHaveLength(16);
    expected.set('r00', first.entries);
    await publish({ dir: tree.dir, store, progress: false, keep: KEEP });
    const shares: number[] = [];
    let deepest = 0;
    for (let n = 1; n < RELEASES; n++) {
      const release = `r${String(n).padStart(2, '0')}`;
      // 1% of files changed, spread over paths; and one removed and one added per release.
      const live = [...tree.files.keys()];
      for (let k = n % 100; k < live.length; k += 100) {
        const i = Number(/ENST(\d+)/.exec(live[k])![1]);
        versions.set(i, (versions.get(i) ?? 0) + 1);
        tree.put(live[k], bodyOf(i, versions.get(i)!));
      }
      tree.remove(live[(n * 337) % live.length]);
      tree.put(pathOf(next), bodyOf(next++, 0));
      const { fullBytes, entries } = await tree.render(release);
      expected.set(release, entries);
      const summary = await publish({ dir: tree.dir, store, progress: false, keep: KEEP });
      expect(summary.release).toBe(release);
      shares.push(summary.manifestBytesUploaded / fullBytes);
      expect(summary.manifestBytesUploaded, `${release}: manifest bytes uploaded`).toBeLessThanOrEqual(0.1 * fullBytes);

      const loaded = await loadRelease(release);
      expect(loaded.entries, `${release}: resolved entries`).toEqual(entries);
      for (const s of loaded.byShard) {
        expect(s.bases.length).toBeLessThanOrEqual(MAX_CHAIN);
        deepest = Math.max(deepest, s.bases.length);
      }
    }
    // The chains did grow (deltas were written), and rebasing kept them within bounds.
    expect(deepest).toBeGreaterThan(2);
    expect(Math.max(...shares)).toBeGreaterThan(0);
  });

  it('the edge answers files of the newest and of an older kept release with their bytes', async () => {
    const h = await store.history();
    const kept = h.releases.map((r) => r.release);
    expect(kept).toHaveLength(KEEP);
    for (const release of [kept[0], kept.at(-1)!]) {
      const origin = await edge(release === kept.at(-1) ? undefined : release);
      expect(await origin.releaseName()).toBe(release);
      const entries = expected.get(release)!;
      for (const e of entries.filter((_, k) => k % 450 === 0)) {
        const got = await origin.read(e.path);
        expect(got?.sha256, `${release} ${e.path}`).toBe(e.sha256);
        expect(sha256Of(Buffer.from(got!.body))).toBe(e.sha256);
      }
      // A file the release removed (or never had) is not listed.
      const listed = new Set(entries.map((e) => e.path));
      const absent = [...expected.values()].flat().find((e) => !listed.has(e.path))!;
      expect(await origin.read(absent.path)).toBeNull();
    }
  });

  it('a corrupted base object is refused, by the edge and by the manifest reader, never served', async () => {
    const h = await store.history();
    const current = h.releases.at(-1)!;
    const loaded = await loadRelease(current.release);
    const shard = loaded.byShard.find((s) => s.bases.length >= 2)!;
    const base = shard.bases.at(-1)!;
    const file = join(storeDir(), objectKey(base.sha256));
    const good = readFileSync(file);
    const inShard = shard.entries[0];
    chmodSync(file, 0o644);
    // Same size, one listed sha256 changed: a reader that skipped the check would serve a wrong entry.
    const text = good.toString('utf8');
    const bad = text.replace(/"sha256":"([0-9a-f])/, (_, c: string) => `"sha256":"${c === '0' ? '1' : '0'}`);
    expect(bad).not.toBe(text);
    writeFileSync(file, bad);
    try {
      const origin = await edge();
      await expect(origin.read(inShard.path)).rejects.toBeInstanceOf(IntegrityError);
      await expect(loadRelease(current.release)).rejects.toBeInstanceOf(BadInputError);
    } finally {
      writeFileSync(file, good);
    }
    expect((await (await edge()).read(inShard.path))?.sha256).toBe(inShard.sha256);
  });

  it('gc after dropping old releases keeps every base a kept release needs; served files still verify', async () => {
    const before = (await store.objects()).size;
    // Past the grace period: the retired releases are dropped and what only they referenced goes.
    const summary = await collectGarbage({ store, now: () => new Date(Date.now() + 49 * 3_600_000) });
    expect(summary.deleted).toBeGreaterThan(0);
    expect((await store.objects()).size).toBe(before - summary.deleted);
    for (const r of (await store.history()).releases) {
      const loaded = await loadRelease(r.release);
      expect(loaded.entries).toEqual(expected.get(r.release));
      const origin = await edge(r.release);
      const e = loaded.entries[Math.floor(loaded.entries.length / 2)];
      expect((await origin.read(e.path))?.sha256).toBe(e.sha256);
    }
  });

  it('publishing the same tree again under its name lists the same manifest and uploads nothing', async () => {
    const h = await store.history();
    const current = h.releases.at(-1)!;
    const again = await publish({ dir: tree.dir, store, progress: false, keep: KEEP });
    expect(again).toMatchObject({ release: current.release, uploaded: 0 });
    expect((await store.history()).releases.at(-1)!.manifest_sha256).toBe(current.manifest_sha256);
  });

  it('a change of shard count writes every shard full', async () => {
    // Down to 8,000 files: 8 shards.
    for (const path of [...tree.files.keys()].slice(8000)) tree.remove(path);
    const { entries } = await tree.render('r-fewer');
    const summary = await publish({ dir: tree.dir, store, progress: false, keep: KEEP });
    expect(summary.release).toBe('r-fewer');
    const loaded = await loadRelease('r-fewer');
    expect(loaded.index.shards).toHaveLength(8);
    expect(loaded.byShard.every((s) => s.bases.length === 0)).toBe(true);
    expect(loaded.entries).toEqual(entries);
    // The published shards are the tree's own.
    const treeIndex = JSON.parse(readFileSync(join(tree.dir, treePaths.manifest), 'utf8'));
    expect(loaded.index.shards).toEqual(treeIndex.shards);
  });
});

describe('release names and interrupted publishes', () => {
  let small: string;
  const trees: Record<string, SyntheticTree> = {};
  beforeAll(async () => {
    small = join(root, 'small');
    for (const [name, changed] of [
      ['a', -1],
      ['b', 3],
      ['c', 5],
    ] as const) {
      const t = new SyntheticTree(join(small, name));
      for (let i = 0; i < 300; i++) t.put(pathOf(i), bodyOf(i, i === changed ? 1 : 0));
      await t.render(`n-${name}`);
      trees[name] = t;
    }
  });

  it('a re-run of an interrupted publish reuses its pending manifest; the same tree again is the same data', async () => {
    const s = new ReleaseStore(new DirectoryBackend(join(small, 'store')));
    await publish({ dir: trees.a.dir, store: s, progress: false });
    // b is interrupted after its manifest and pending entry are written, at its first file.
    const fileShas = new Set(trees.b.entries().map((e) => e.sha256));
    const failing = Object.create(s) as ReleaseStore;
    failing.putObject = async (sha, body, type) => {
      if (fileShas.has(sha)) throw new Error('interrupted');
      return s.putObject(sha, body, type);
    };
    await expect(publish({ dir: trees.b.dir, store: failing, progress: false })).rejects.toThrow('interrupted');
    const pending = (await s.history()).pending.find((p) => p.release === 'n-b')!;
    expect(pending).toBeDefined();
    // Another release becomes current meanwhile; the re-run still lists b's pending manifest.
    await publish({ dir: trees.c.dir, store: s, progress: false });
    const rerun = await publish({ dir: trees.b.dir, store: s, progress: false });
    expect(rerun.release).toBe('n-b');
    const h = await s.history();
    expect(h.pending).toEqual([]);
    expect(h.releases.find((r) => r.release === 'n-b')!.manifest_sha256).toBe(pending.manifest_sha256);
    // b's head objects are deltas on a's (it was encoded against a, the current release then).
    const index = JSON.parse((await s.get(objectKey(pending.manifest_sha256)))!.body.toString('utf8'));
    const heads = await Promise.all(
      index.shards.map(async (e: ManifestEntry, i: number) =>
        parseShardObject((await s.get(objectKey(e.sha256)))!.body, i, index.shards.length, e.path),
      ),
    );
    expect(heads.some((o) => o.bases.length > 0)).toBe(true);

    // a again, after b and c: the same data under its name, its first manifest listed again.
    const firstA = h.releases.find((r) => r.release === 'n-a')!.manifest_sha256;
    const again = await publish({ dir: trees.a.dir, store: s, progress: false });
    expect(again).toMatchObject({ release: 'n-a', uploaded: 0 });
    expect((await s.pointer())!.manifest_sha256).toBe(firstA);
    // Another tree under a's name is refused.
    trees.c.put(pathOf(0), bodyOf(0, 9));
    await trees.c.render('n-a');
    await expect(publish({ dir: trees.c.dir, store: s, progress: false })).rejects.toThrow(/with other content/);

    // A chained mirror of this store (served by isoatlas serve) holds b's chain and reads b exactly.
    const server = await startServer({ dir: join(small, 'store') });
    const to = join(small, 'mirror');
    try {
      await mirror({ from: server.base, to, releases: ['n-b'], progress: false });
    } finally {
      await server.stop();
    }
    const mirrored = new ReleaseStore(new DirectoryBackend(to));
    const b = (await mirrored.history()).releases.find((r) => r.release === 'n-b')!;
    expect(b.manifest_sha256).toBe(pending.manifest_sha256);
    const read = async (path: string, listed?: ManifestEntry) =>
      (await mirrored.get(objectKey(path === treePaths.manifest ? b.manifest_sha256 : listed!.sha256)))?.body ?? null;
    const loaded = await loadManifest(read, 'mirror ');
    expect(loaded.byShard.some((x) => x.bases.length > 0)).toBe(true);
    expect(loaded.entries).toEqual(trees.b.entries());
  });
});
