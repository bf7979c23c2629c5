// Packs: how a release's objects travel to mirrors in a few large reads instead of one request per
// object (git's packfiles, restic's packs). Publish groups the objects a release adds to the store
// into packs of bounded size; the objects stay in the store one by one too, for the edge's answers.
//
//   <prefix>packs/<aa>/<rest>   a pack whose sha256 is <aa><rest>: its objects' bytes, concatenated
//                               in the order its index lists them, nothing else
//   an object (objects/…)       a pack index (PackIndex): the pack's sha256 and size, and each object's
//                               sha256, offset and length, in pack order
//   an object (objects/…)       a release's pack list (PackList): every pack holding an object the
//                               release lists, its index and object count; manifest.json names it
//                               (ManifestIndex.packs)
//
// A pack has no header, so whoever holds its objects can rebuild the pack, or any byte range of it,
// from its index (a mirror's `isoatlas serve` answers other mirrors that way without storing packs),
// and the pack's sha256 checks the rebuilt bytes. A mirror holds only the objects of its releases,
// and a pack list names earlier packs that hold other releases' objects too, so a mirror can rebuild
// the ranges of the objects it holds, not always the whole pack. A reader checks each object it cuts from a pack
// against the sha256 the index gives, and the index against the sha256 the pack list gives.
import { SHA256_HEX } from './manifest.js';

export const PACKS_PREFIX = 'packs/';
export const PACK_FORMAT = 1;
/** Publish closes a pack once it holds this many bytes; an object larger than this is a pack alone. */
export const PACK_TARGET_BYTES = 32 * 1024 * 1024;

/** Where the pack with this sha256 lives, relative to the store's prefix. */
export const packKey = (sha256: string) => `${PACKS_PREFIX}${sha256.slice(0, 2)}/${sha256.slice(2)}`;

/** The sha256 a pack key names, or null for any other key. */
export function packSha(key: string): string | null {
  const m = /^packs\/([0-9a-f]{2})\/([0-9a-f]{62})$/.exec(key);
  return m ? m[1] + m[2] : null;
}

/** An object's place in its pack: [sha256, offset, length]. */
export type PackedObject = [sha256: string, offset: number, length: number];

export interface PackIndex {
  format: typeof PACK_FORMAT;
  pack: { sha256: string; size: number };
  /** In pack order: each object starts where the one before it ends, the first at 0, the last ends
   * at the pack's size. */
  objects: PackedObject[];
}

export interface PackRef {
  sha256: string;
  size: number;
  /** The pack's index, an object of the store. */
  index: { sha256: string; size: number };
  /** How many objects the pack holds. */
  objects: number;
}

export interface PackList {
  format: typeof PACK_FORMAT;
  /** Every pack holding an object the release lists: those its publish made and earlier releases'
   * packs that hold objects it shares with them. An object in none (stored before packs existed) is
   * read on its own. */
  packs: PackRef[];
}

const sized = (x: { sha256: string; size: number } | undefined) =>
  Boolean(x) &&
  typeof x!.sha256 === 'string' &&
  SHA256_HEX.test(x!.sha256) &&
  Number.isSafeInteger(x!.size) &&
  x!.size >= 0;

function parseJson<T>(body: Uint8Array, where: string): T {
  try {
    return JSON.parse(new TextDecoder().decode(body)) as T;
  } catch (err) {
    throw new Error(`${where}: not JSON (${(err as Error).message})`);
  }
}

/** A pack index, checked for shape and for objects that tile the pack exactly. */
export function parsePackIndex(body: Uint8Array, where: string): PackIndex {
  const index = parseJson<PackIndex>(body, where);
  if (!index || index.format !== PACK_FORMAT || !sized(index.pack) || !Array.isArray(index.objects))
    throw new Error(`${where}: not an isoatlas pack index of format ${PACK_FORMAT}`);
  let end = 0;
  for (const o of index.objects) {
    if (
      !Array.isArray(o) ||
      o.length !== 3 ||
      typeof o[0] !== 'string' ||
      !SHA256_HEX.test(o[0]) ||
      o[1] !== end ||
      !Number.isSafeInteger(o[2]) ||
      o[2] < 0
    )
      throw new Error(
        `${where}: invalid object ${JSON.stringify(o).slice(0, 200)} (expected [sha256, ${end}, length])`,
      );
    end += o[2];
  }
  if (end !== index.pack.size)
    throw new Error(`${where}: its objects end at byte ${end}, but the pack has ${index.pack.size} bytes`);
  return index;
}

/** A release's pack list, checked for shape. */
export function parsePackList(body: Uint8Array, where: string): PackList {
  const list = parseJson<PackList>(body, where);
  if (!list || list.format !== PACK_FORMAT || !Array.isArray(list.packs))
    throw new Error(`${where}: not an isoatlas pack list of format ${PACK_FORMAT}`);
  for (const p of list.packs) {
    if (!sized(p) || !sized(p?.index) || !Number.isSafeInteger(p.objects) || p.objects < 0)
      throw new Error(`${where}: invalid pack ${JSON.stringify(p).slice(0, 200)}`);
  }
  return list;
}
