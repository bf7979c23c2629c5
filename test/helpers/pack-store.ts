// A published store with packs (edge/contract/packs.ts), written from a rendered tree for tests of the
// mirror's side: every file once as an object by its sha256 (a link into the tree), the release's objects (its manifest
// shards, then its files in path order) cut into packs, each pack's index and the release's pack list
// as objects, manifest.json naming the pack list, the pointer and the history. Independent of
// publish's own packing on purpose: the mirror is tested against the contract, not against publish.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PACK_FORMAT, PACK_TARGET_BYTES, packKey, type PackIndex, type PackList } from '../../edge/contract/packs.js';
import { HISTORY_KEY, POINTER_KEY, STORE_FORMAT, objectKey } from '../../edge/contract/store-layout.js';
import { treePaths } from '../../edge/contract/tree.js';
import { writeManifest } from '../../build/render/manifest.js';
import { readManifest } from './tree.js';

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

export interface PackedStore {
  release: string;
  manifestSha: string;
  /** Every object a mirror of the store holds: the manifest, its shards, the files, the pack list and
   * the indexes (sha256 → size). */
  objects: Map<string, number>;
  /** The packs, in the pack list's order (the bulk pack not among them). */
  packs: PackIndex[];
  /** The bulk pack, when asked for. */
  bulk?: PackIndex;
}

function put(dir: string, key: string, body: Uint8Array): void {
  mkdirSync(dirname(join(dir, key)), { recursive: true });
  writeFileSync(join(dir, key), body);
}

/** `objects: false` writes only the objects no pack holds (the manifest, the pack list, the indexes):
 * a source a mirror can sync from through its packs only. `bulkBytes` lists one more pack, last, of
 * at least that many bytes: the tree's largest file over and over. Its body is not written (a server
 * streams a pack from its objects), so a pack larger than anything the tree holds costs no disk. */
export function writePackedStore(
  tree: string,
  dir: string,
  opts: { release?: string; packBytes?: number; objects?: boolean; bulkBytes?: number } = {},
): PackedStore {
  const { index, entries } = readManifest(tree);
  const release = opts.release ?? index.release;
  const target = opts.packBytes ?? PACK_TARGET_BYTES;
  const pathOf = new Map<string, { path: string; size: number }>();
  for (const e of [...index.shards, ...entries])
    if (!pathOf.has(e.sha256)) pathOf.set(e.sha256, { path: e.path, size: e.size });
  const objects = new Map<string, number>();
  const packs: PackIndex[] = [];
  let chunks: Buffer[] = [];
  let listed: PackIndex['objects'] = [];
  let size = 0;
  const close = () => {
    if (listed.length === 0) return;
    const body = Buffer.concat(chunks);
    const pack: PackIndex = { format: PACK_FORMAT, pack: { sha256: sha256(body), size }, objects: listed };
    put(dir, packKey(pack.pack.sha256), body);
    packs.push(pack);
    chunks = [];
    listed = [];
    size = 0;
  };
  for (const [sha, { path, size: length }] of pathOf) {
    objects.set(sha, length);
    const body = readFileSync(join(tree, path));
    if (opts.objects !== false) {
      mkdirSync(dirname(join(dir, objectKey(sha))), { recursive: true });
      // A link: cheap to make and remove, and the tests write only to the mirrors of the store.
      symlinkSync(join(tree, path), join(dir, objectKey(sha)));
    }
    chunks.push(body);
    listed.push([sha, size, length]);
    size += length;
    if (size >= target) close();
  }
  close();
  let bulk: PackIndex | undefined;
  if (opts.bulkBytes !== undefined) {
    const [sha, length] = [...objects].reduce((a, b) => (b[1] > a[1] ? b : a));
    const body = readFileSync(join(tree, pathOf.get(sha)!.path));
    const times = Math.ceil(opts.bulkBytes / length);
    const hash = createHash('sha256');
    for (let i = 0; i < times; i++) hash.update(body);
    bulk = {
      format: PACK_FORMAT,
      pack: { sha256: hash.digest('hex'), size: times * length },
      objects: Array.from({ length: times }, (_, i) => [sha, i * length, length]),
    };
  }
  const object = (body: Uint8Array) => {
    const sha = sha256(body);
    put(dir, objectKey(sha), body);
    objects.set(sha, body.length);
    return { sha256: sha, size: body.length };
  };
  const list: PackList = {
    format: PACK_FORMAT,
    packs: [...packs, ...(bulk ? [bulk] : [])].map((p) => ({
      sha256: p.pack.sha256,
      size: p.pack.size,
      index: object(Buffer.from(JSON.stringify(p))),
      objects: p.objects.length,
    })),
  };
  const manifest = JSON.parse(readFileSync(join(tree, treePaths.manifest), 'utf8')) as Record<string, unknown>;
  const { sha256: manifestSha } = object(
    Buffer.from(JSON.stringify({ ...manifest, packs: object(Buffer.from(JSON.stringify(list))) })),
  );
  const published = { release, manifest_sha256: manifestSha, published_at: new Date().toISOString() };
  put(dir, POINTER_KEY, Buffer.from(JSON.stringify({ format: STORE_FORMAT, ...published, previous: null })));
  put(
    dir,
    HISTORY_KEY,
    Buffer.from(JSON.stringify({ format: STORE_FORMAT, releases: [published], pending: [], retired: [] })),
  );
  return { release, manifestSha, objects, packs, bulk };
}

/** A small tree of `count` files of `tree` (the first in path order) with its own manifest: cheap to
 * mirror many times. */
export async function writeSmallTree(tree: string, dir: string, count: number): Promise<void> {
  const { index, entries } = readManifest(tree);
  const kept = entries.slice(0, count);
  for (const e of kept) {
    mkdirSync(dirname(join(dir, e.path)), { recursive: true });
    copyFileSync(join(tree, e.path), join(dir, e.path));
  }
  await writeManifest(dir, `${index.release}-small`, kept);
}
