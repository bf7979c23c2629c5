// Publish's packs (edge/contract/packs.ts): the objects a publish adds to the store, grouped in
// order into packs of at most PACK_TARGET_BYTES, each with its index, and the release's pack list,
// which also names the packs of earlier kept releases that hold objects this release lists. A
// pack's sha256 is known before any upload (manifest.json names the pack list, which names the
// packs), so the packs are hashed once here and built again from the same bodies when uploaded.
import { createHash } from 'node:crypto';
import {
  PACK_FORMAT,
  PACK_TARGET_BYTES,
  parsePackIndex,
  parsePackList,
  type PackIndex,
  type PackList,
  type PackRef,
} from '../../edge/contract/packs.js';
import { objectKey, type PublishedRelease } from '../../edge/contract/store-layout.js';
import { parseManifestIndex } from '../../edge/contract/manifest.js';
import { treePaths, type ManifestIndex } from '../../edge/contract/tree.js';
import type { ReleaseStore } from '../../edge/store/release-store.js';
import { forEachLimited } from '../common/concurrency.js';
import { StorageError } from '../common/storage-errors.js';

/** An object that goes into a pack: its sha256 and size (its bytes come from a reader). */
export interface PackedItem {
  sha256: string;
  size: number;
}

/** A pack as publish made it (or read it back from the store): its entry in the pack list, its
 * index and the index's bytes. */
export interface Pack {
  ref: PackRef;
  index: PackIndex;
  indexBody: Buffer;
}

const sha256Of = (body: Uint8Array) => createHash('sha256').update(body).digest('hex');

/** Cuts the items `pages` give, in their order, into packs of at most `target` bytes (an item larger
 * than that is a pack alone), hashes each and hands it to `each` before the next is cut. Reads a
 * pack's bodies `concurrency` at once and hashes them in order, so one pack's bodies at most are
 * held. The same items give the same packs. */
export async function cutPacks(
  pages: Iterable<readonly PackedItem[]>,
  read: (item: PackedItem) => Promise<Uint8Array>,
  concurrency: number,
  each: (pack: Pack) => void | Promise<void>,
  target = PACK_TARGET_BYTES,
): Promise<void> {
  const hashed = async (group: PackedItem[]) => {
    const bodies = new Map<string, Uint8Array>();
    await forEachLimited(group, concurrency, async (item) => void bodies.set(item.sha256, await read(item)));
    const hash = createHash('sha256');
    let offset = 0;
    const objects: PackIndex['objects'] = [];
    for (const item of group) {
      const body = bodies.get(item.sha256)!;
      hash.update(body);
      objects.push([item.sha256, offset, body.length]);
      offset += body.length;
    }
    return packOf({ format: PACK_FORMAT, pack: { sha256: hash.digest('hex'), size: offset }, objects });
  };
  let open: PackedItem[] = [];
  let bytes = 0;
  for (const page of pages)
    for (const item of page) {
      if (open.length > 0 && bytes + item.size <= target) {
        open.push(item);
        bytes += item.size;
        continue;
      }
      if (open.length > 0) await each(await hashed(open));
      open = [item];
      bytes = item.size;
    }
  if (open.length > 0) await each(await hashed(open));
}

function packOf(index: PackIndex): Pack {
  const indexBody = Buffer.from(JSON.stringify(index));
  return {
    index,
    indexBody,
    ref: {
      sha256: index.pack.sha256,
      size: index.pack.size,
      index: { sha256: sha256Of(indexBody), size: indexBody.length },
      objects: index.objects.length,
    },
  };
}

/** A pack list's bytes. */
export const packListBody = (packs: readonly PackRef[]): Buffer =>
  Buffer.from(JSON.stringify({ format: PACK_FORMAT, packs: [...packs] } satisfies PackList));

/** A pack's bytes, built from its objects' bodies per its index into one buffer and checked against
 * its sha256: a body that is not what the index says is refused, never stored as part of a pack. */
export async function buildPack(
  pack: Pack,
  read: (item: PackedItem) => Promise<Uint8Array>,
  concurrency: number,
): Promise<Buffer> {
  const out = Buffer.allocUnsafe(pack.ref.size);
  await forEachLimited(pack.index.objects, concurrency, async ([sha256, offset, length]) => {
    const body = await read({ sha256, size: length });
    if (body.length !== length)
      throw new Error(`object ${sha256} has ${body.length} bytes, its pack index says ${length}`);
    out.set(body, offset);
  });
  if (sha256Of(out) !== pack.ref.sha256)
    throw new Error(`pack ${pack.ref.sha256} built from its objects does not hash to its name`);
  return out;
}

/** Reads a value the store must have, checked against the sha256 that names it. */
async function readObject(store: ReleaseStore, sha256: string, what: string): Promise<Buffer | null> {
  const got = await store.get(objectKey(sha256));
  if (!got) return null;
  if (sha256Of(got.body) !== sha256)
    throw new StorageError(
      `${store.where}${objectKey(sha256)} (${what}) does not hash to its name: the store is damaged`,
    );
  return got.body;
}

/** The packs a published manifest's pack list names, each with its index, read from the store one
 * at a time and handed to `each`; returns the pack list's bytes. Null for a manifest without packs
 * (published before packs existed); missing objects are named. */
export async function readPacks(
  store: ReleaseStore,
  index: ManifestIndex,
  where: string,
  each: (pack: Pack) => void | Promise<void>,
): Promise<Buffer | null> {
  if (!index.packs) return null;
  const listBody = await readObject(store, index.packs.sha256, `the pack list of ${where}`);
  if (!listBody)
    throw new StorageError(
      `${store.where}${objectKey(index.packs.sha256)}: the pack list ${where} names is missing from the store`,
    );
  const list = parsePackList(listBody, `${store.where}${objectKey(index.packs.sha256)}`);
  for (const ref of list.packs) {
    const body = await readObject(store, ref.index.sha256, `the index of pack ${ref.sha256}`);
    if (!body)
      throw new StorageError(
        `${store.where}${objectKey(ref.index.sha256)}: the index of pack ${ref.sha256}, which ${where} names, is missing from the store`,
      );
    await each({ ref, index: parsePackIndex(body, `${store.where}${objectKey(ref.index.sha256)}`), indexBody: body });
  }
  return listBody;
}

/** Where earlierPacks puts what it reads of one kept release, which counts only once all of that
 * release's pack list was read (publish-ledger.ts keeps it on disk). */
export interface EarlierPacksSink {
  /** A release's reading starts. */
  start(): void;
  /** A pack its list names, in order. */
  pack(pack: Pack): void;
  /** All of it was read: its pack list (whose sha256 is given) and pack indexes count. */
  count(listSha: string): void;
}

/** The packs of the kept releases, in the history's order, and the pack list and index objects read
 * to find them (the store has those), each release's handed to `sink`. A release whose manifest or
 * pack list cannot be read is left out, said in the log: its objects are then read one by one. */
export async function earlierPacks(
  store: ReleaseStore,
  releases: readonly PublishedRelease[],
  sink: EarlierPacksSink,
  log: (line: string) => void,
): Promise<void> {
  for (const r of releases) {
    const where = `release ${r.release}'s ${treePaths.manifest}`;
    try {
      const body = await readObject(store, r.manifest_sha256, where);
      if (!body) continue; // knownObjects says so already
      sink.start();
      const listBody = await readPacks(
        store,
        parseManifestIndex(body, `${store.where}${objectKey(r.manifest_sha256)}`),
        where,
        (p) => sink.pack(p),
      );
      if (listBody) sink.count(sha256Of(listBody));
    } catch (err) {
      log(
        `${(err as Error).message}; the new release's pack list leaves out ${r.release}'s packs, so mirrors read the objects they hold one by one`,
      );
    }
  }
}
