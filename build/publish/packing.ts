// Publish's packs (edge/contract/packs.ts): the objects a publish adds to the store, grouped in
// order into packs of at most PACK_TARGET_BYTES, each with its index, and the release's pack list,
// which also names the packs of earlier kept releases that hold objects this release lists. A
// pack's sha256 is known before any upload (manifest.json names the pack list, which names the
// packs), so the packs are cut and hashed in the check's one read of the tree (PackCutter) and
// built from the same bodies when uploaded (upload-pass.ts).
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

/** Cuts items, given in order with their bodies, into packs of at most `target` bytes (an item
 * larger than that is a pack alone), hashing each body as it comes, as restic's packer does: a pack
 * is hashed in the same pass that reads its objects, and no body is held. Each pack is handed to
 * `each` once it is closed (`end` closes the last). The same items give the same packs. */
export class PackCutter {
  private hash = createHash('sha256');
  private objects: PackIndex['objects'] = [];
  private bytes = 0;

  constructor(
    private readonly each: (pack: Pack) => void,
    private readonly target = PACK_TARGET_BYTES,
  ) {}

  add(item: PackedItem, body: Uint8Array): void {
    if (this.objects.length > 0 && this.bytes + item.size > this.target) this.close();
    this.hash.update(body);
    this.objects.push([item.sha256, this.bytes, body.length]);
    this.bytes += body.length;
  }

  end(): void {
    if (this.objects.length > 0) this.close();
  }

  private close(): void {
    this.each(
      packOf({
        format: PACK_FORMAT,
        pack: { sha256: this.hash.digest('hex'), size: this.bytes },
        objects: this.objects,
      }),
    );
    this.hash = createHash('sha256');
    this.objects = [];
    this.bytes = 0;
  }
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

/** The store's reads of packs and their lists (publish hands its early reads: published-manifest.ts). */
export type PackReads = Pick<ReleaseStore, 'get' | 'where'>;

/** Reads a value the store must have, checked against the sha256 that names it. */
async function readObject(store: PackReads, sha256: string, what: string): Promise<Buffer | null> {
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
  store: PackReads,
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
  store: PackReads,
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
