// Publish's packs (build/publish/packing.ts, edge/contract/packs.ts) over a store in a directory: a
// synthetic tree of files of many sizes, cut into small packs so that a few hundred KB make many.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import { publish } from '../build/publish/publish.js';
import { collectGarbage } from '../build/publish/collect.js';
import { writeManifest } from '../build/render/manifest.js';
import { contentTypeOf, treePaths, type ManifestEntry } from '../edge/contract/tree.js';
import { parseManifestIndex } from '../edge/contract/manifest.js';
import { objectKey } from '../edge/contract/store-layout.js';
import { packKey, parsePackIndex, parsePackList, type PackIndex, type PackRef } from '../edge/contract/packs.js';
import { readManifest } from './helpers/tree.js';
import type { StoreBackend } from '../edge/store/backend.js';

const TARGET = 64 * 1024;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

let root: string;
let tree1: string;

/** A tree of 120 files of 100 B to 20 KB (deterministic bytes, those numbered in `changed` with
 * other bytes), plus one file larger than a pack unless `big` is false. */
async function syntheticTree(
  dir: string,
  release: string,
  { changed = [] as number[], big = true } = {},
): Promise<string> {
  const entries: ManifestEntry[] = [];
  const put = (path: string, body: Buffer) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), body);
    entries.push({ path, size: body.length, sha256: sha(body), content_type: contentTypeOf(path) });
  };
  for (let i = 0; i < 120; i++) {
    const size = 100 + ((i * 7919) % 20_000);
    const body = changed.includes(i) ? { i, changed: release } : { i, pad: 'x'.repeat(size) };
    put(genePath(i), Buffer.from(JSON.stringify(body)));
  }
  if (big) put('structures/BIG.cif', Buffer.concat([Buffer.from('big '), Buffer.alloc(TARGET * 2, 7)]));
  put(treePaths.release, Buffer.from(JSON.stringify({ release })));
  await writeManifest(dir, release, entries);
  return dir;
}

const genePath = (i: number) => `api/v1/genes/ENSG${String(i).padStart(11, '0')}.json`;

const storeAt = (name: string) => new ReleaseStore(new DirectoryBackend(join(root, name)));

/** The current (or named) release's manifest as published, its pack list and each pack's index. */
async function packsOf(store: ReleaseStore, manifestSha?: string) {
  const m = manifestSha ?? (await store.pointer())!.manifest_sha256;
  const index = parseManifestIndex((await store.get(objectKey(m)))!.body, 'manifest');
  expect(index.packs).toBeDefined();
  const listBody = (await store.get(objectKey(index.packs!.sha256)))!.body;
  expect(sha(listBody)).toBe(index.packs!.sha256);
  const list = parsePackList(listBody, 'pack list');
  const indexes = new Map<string, PackIndex>();
  for (const p of list.packs) {
    const body = (await store.get(objectKey(p.index.sha256)))!.body;
    expect(sha(body)).toBe(p.index.sha256);
    indexes.set(p.sha256, parsePackIndex(body, 'pack index'));
  }
  return { manifest: m, listSha: index.packs!.sha256, packs: list.packs, indexes };
}

/** Whether a pack's bytes are its objects' bytes, in its index's order, and hash to its name. */
async function checkPack(store: ReleaseStore, ref: PackRef, index: PackIndex): Promise<void> {
  const pack = (await store.get(packKey(ref.sha256)))!.body;
  expect(sha(pack)).toBe(ref.sha256);
  expect(pack.length).toBe(ref.size);
  expect(index.objects.length).toBe(ref.objects);
  const parts = await Promise.all(index.objects.map(async ([s]) => (await store.get(objectKey(s)))!.body));
  expect(Buffer.concat(parts).equals(pack)).toBe(true);
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'isoatlas-packs-'));
  tree1 = await syntheticTree(join(root, 'tree1'), '2026.01-packs');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('publish packs what it adds', () => {
  let store: ReleaseStore;
  let first: Awaited<ReturnType<typeof packsOf>>;

  it('names a pack list in manifest.json; every object it added is in exactly one pack, whose bytes are its objects', async () => {
    store = storeAt('store');
    const s = await publish({ dir: tree1, store, progress: false, packTargetBytes: TARGET });
    first = await packsOf(store);
    const generated = new Set([first.manifest, first.listSha, ...first.packs.map((p) => p.index.sha256)]);
    const added = [...(await store.objects()).keys()].filter((o) => !generated.has(o));
    const packed = [...first.indexes.values()].flatMap((i) => i.objects.map(([o]) => o));
    expect(packed.sort()).toEqual(added.sort()); // each once: no duplicate in `packed`
    expect(first.packs.length).toBeGreaterThan(3);
    for (const p of first.packs) {
      await checkPack(store, p, first.indexes.get(p.sha256)!);
      if (p.objects > 1) expect(p.size).toBeLessThanOrEqual(TARGET);
    }
    expect(first.packs.some((p) => p.objects === 1 && p.size > TARGET)).toBe(true); // the big file, alone
    // The manifest shards come first, so a mirror reads them in the first pack.
    const shards = parseManifestIndex((await store.get(objectKey(first.manifest)))!.body, 'm').shards;
    expect(first.indexes.get(first.packs[0].sha256)!.objects[0][0]).toBe(shards[0].sha256);
    expect([...(await store.packs()).keys()].sort()).toEqual(first.packs.map((p) => p.sha256).sort());
    expect(s).toMatchObject({ packs: first.packs.length, packBytes: first.packs.reduce((n, p) => n + p.size, 0) });
  });

  it('the same tree over the same store gives the same packs; publishing it again adds none', async () => {
    const again = await publish({ dir: tree1, store, progress: false, packTargetBytes: TARGET });
    expect(again).toMatchObject({ uploaded: 0, packs: 0 });
    expect((await packsOf(store)).listSha).toBe(first.listSha);
    const other = storeAt('other');
    await publish({ dir: tree1, store: other, progress: false, packTargetBytes: TARGET });
    expect((await packsOf(other)).listSha).toBe(first.listSha);
  });

  it('a release changing a few files adds small packs of exactly its new objects, and names the packs it shares', async () => {
    const changed = [3, 50, 90];
    const tree2 = await syntheticTree(join(root, 'tree2'), '2026.02-packs', { changed, big: false });
    const before = new Set((await store.objects()).keys());
    const s = await publish({ dir: tree2, store, progress: false, packTargetBytes: TARGET, keep: 1 });
    const second = await packsOf(store);
    const old = new Set(first.packs.map((p) => p.sha256));
    const made = second.packs.filter((p) => !old.has(p.sha256));
    expect(s.packs).toBe(made.length);
    const generated = new Set([second.manifest, second.listSha, ...made.map((p) => p.index.sha256)]);
    const added = [...(await store.objects()).keys()].filter((o) => !before.has(o) && !generated.has(o));
    expect(added.length).toBeGreaterThanOrEqual(changed.length + 1); // + release.json, + changed shards
    const packed = made.flatMap((p) => second.indexes.get(p.sha256)!.objects.map(([o]) => o));
    expect(packed.sort()).toEqual(added.sort());
    expect(made.reduce((n, p) => n + p.size, 0)).toBeLessThan(TARGET);
    // Release 1's packs that hold an object release 2 lists are named; the big file's pack is not.
    const bigPack = first.packs.find((p) => p.size > TARGET)!;
    const shared = first.packs.filter((p) => p !== bigPack).map((p) => p.sha256);
    expect(second.packs.map((p) => p.sha256).sort()).toEqual([...made.map((p) => p.sha256), ...shared].sort());
  });

  it('gc, once a retired release is past its grace, deletes its packs no kept release names and keeps the rest', async () => {
    const bigPack = first.packs.find((p) => p.size > TARGET)!;
    // Within the grace the retired release protects its packs.
    const within = await collectGarbage({ store });
    expect(within.packs).toMatchObject({ deleted: 0, referenced: (await packsOf(store)).packs.length + 1 });
    const after = await collectGarbage({ store, now: () => new Date(Date.now() + 49 * 3_600_000) });
    expect(after.packs).toMatchObject({ deleted: 1, bytesDeleted: bigPack.size });
    const second = await packsOf(store);
    expect([...(await store.packs()).keys()].sort()).toEqual(second.packs.map((p) => p.sha256).sort());
    // A kept pack stays whole even where gc deleted objects of it that no kept release lists.
    for (const p of second.packs) expect(sha((await store.get(packKey(p.sha256)))!.body)).toBe(p.sha256);
  });
});

/** A directory backend whose writes of packs fail after the first `packs`. */
function failingPacks(backend: StoreBackend, packs: number): StoreBackend {
  let written = 0;
  return new Proxy(backend, {
    get(target, prop, receiver) {
      if (prop !== 'write') return Reflect.get(target, prop, receiver);
      return (key: string, ...rest: unknown[]) => {
        if (key.startsWith('packs/') && ++written > packs) throw new Error('connection reset');
        return (target.write as (...a: unknown[]) => Promise<void>).call(target, key, ...rest);
      };
    },
  });
}

it('an interrupted publish, run again, uploads only the packs still missing and ends with the same pack list', async () => {
  const backend = new DirectoryBackend(join(root, 'interrupted'));
  await expect(
    publish({
      dir: tree1,
      store: new ReleaseStore(failingPacks(backend, 2)),
      progress: false,
      packTargetBytes: TARGET,
      concurrency: 1,
    }),
  ).rejects.toThrow(/connection reset/);
  const store = new ReleaseStore(backend);
  const pending = (await store.history()).pending;
  expect(pending.map((p) => p.release)).toEqual(['2026.01-packs']);
  const planned = await packsOf(store, pending[0].manifest_sha256);
  expect((await store.packs()).size).toBe(2);
  const resumed = await publish({ dir: tree1, store, progress: false, packTargetBytes: TARGET });
  expect(resumed.packs).toBe(planned.packs.length - 2);
  const done = await packsOf(store);
  expect(done.manifest).toBe(pending[0].manifest_sha256);
  expect([...(await store.packs()).keys()].sort()).toEqual(planned.packs.map((p) => p.sha256).sort());
  for (const p of done.packs) await checkPack(store, p, done.indexes.get(p.sha256)!);
  // Every object of the release is in the store too (the dead run stopped before most of them).
  const held = await store.objects();
  const { entries } = readManifest(tree1);
  expect(entries.filter((e) => !held.has(e.sha256))).toEqual([]);
});
