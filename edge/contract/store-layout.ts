// How a published atlas is laid out in its bucket (or a mirror's directory, or below any base URL):
// every file of every release stored once, named by its sha256; a release is its manifest (itself
// such an object) plus an entry in the release history; a small pointer names the current release.
//
//   <prefix>current.json              the pointer (ReleasePointer)
//   <prefix>releases.json             the history (ReleaseHistory): every kept release, oldest first
//   <prefix>objects/<aa>/<rest>       a file whose sha256 is <aa><rest> (bodies, manifest shards and
//                                     each release's manifest.json alike)
//   <prefix>packs/<aa>/<rest>         a pack of objects whose sha256 is <aa><rest>, for mirrors (packs.ts)
//   <prefix>edge.json                 the edge record (EdgeRecord): the CDN's KeyValueStore that pins
//                                     the current release, once a publish or rollback has named one
//   <prefix>conditional-write-probe   a constant object publish, rollback and gc write conditionally to
//                                     check that the server honours conditional writes
//
// Objects never change under their name, so publishing uploads only what the store does not have,
// and a reader that knows a release's manifest sha256 can check every byte it reads.
import { SHA256_HEX } from './manifest.js';

export const POINTER_KEY = 'current.json';
export const HISTORY_KEY = 'releases.json';
export const OBJECTS_PREFIX = 'objects/';
export const EDGE_KEY = 'edge.json';
export const PROBE_KEY = 'conditional-write-probe';
/** Format of current.json and releases.json; 2 since releases are content-addressed. */
export const STORE_FORMAT = 2;

/** Where the object with this sha256 lives, relative to the store's prefix. */
export const objectKey = (sha256: string) => `${OBJECTS_PREFIX}${sha256.slice(0, 2)}/${sha256.slice(2)}`;

/** The sha256 an object key names, or null for any other key. */
export function objectSha(key: string): string | null {
  const m = /^objects\/([0-9a-f]{2})\/([0-9a-f]{62})$/.exec(key);
  return m ? m[1] + m[2] : null;
}

/** Where a release's file is public below a store's base (structure redirects point there). */
export const releasePublicPath = (release: string, treePath: string) => `releases/${release}/${treePath}`;

/** Release names become URL segments (`/releases/<release>/…`, `?release=`): a safe alphabet. */
export const RELEASE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** One published release: its name, its manifest, when it was published. */
export interface PublishedRelease {
  release: string;
  /** sha256 of the release's manifest.json, which lists every other file's sha256. */
  manifest_sha256: string;
  published_at: string;
}

export interface ReleasePointer extends PublishedRelease {
  format: typeof STORE_FORMAT;
  /** The release this one replaced, for `isoatlas rollback`. */
  previous: string | null;
}

export interface RetiredRelease extends PublishedRelease {
  /** When it left the history; its objects may be collected a grace period after this. */
  retired_at: string;
}

/** A release being published: its manifest is in the store, its files are being uploaded. */
export interface PendingRelease {
  release: string;
  manifest_sha256: string;
  started_at: string;
}

export interface ReleaseHistory {
  format: typeof STORE_FORMAT;
  /** Every kept release, in publishing order (oldest first). */
  releases: PublishedRelease[];
  /** Releases being published. Garbage collection keeps what they reference, so an object a
   * publish relies on is never collected under it. */
  pending: PendingRelease[];
  /** Releases dropped by `--keep`, still protected from garbage collection for a grace period. */
  retired: RetiredRelease[];
  /** Releases the CDN's KeyValueStore pinned until a publish or rollback moved its pin away: the
   * edge may answer from them until then, and cached answers point into them for a while after, so
   * gc protects them for a grace period as it does retired ones. Absent in stores without one. */
  unpinned?: UnpinnedRelease[];
  /** Every release name ever entered in this history, with the sha256 of its tree's own manifest.json
   * (the published one depends on the store: its manifest shards are encoded against the current release,
   * build/publish/manifest-encoding.ts, and it names the release's packs): never pruned, so a
   * name keeps meaning the same data after gc has dropped its entry. Absent in older stores (their
   * names are those of the lists above, whose manifests were the trees'). */
  names?: Record<string, string>;
  /** What garbage collection is doing, so that a publish can tell whether objects it relies on may
   * have been deleted since it looked (absent until the first gc that deletes anything). */
  gc?: GcState;
}

/** gc bumps `epoch` when it starts deleting (setting `deleting_since`) and again when it stops, both
 * conditional writes of the history. A publish that read epoch n with no deletion under way, and
 * moves its release to the kept ones in a conditional write that still sees epoch n, knows that no
 * object was deleted in between; otherwise it checks the store again first. */
export interface GcState {
  epoch: number;
  /** Set while a gc is deleting objects: when it started. */
  deleting_since?: string;
}

export interface UnpinnedRelease {
  release: string;
  /** When the pin moved away from it (taken after the KeyValueStore write). */
  unpinned_at: string;
}

/** Which CDN pins this store's current release: written by the first `publish --kvs` or
 * `rollback --kvs`, read by every later publish, rollback, releases and gc, so none of them can
 * leave the pin behind or collect what it names. */
export interface EdgeRecord {
  format: typeof STORE_FORMAT;
  /** The CloudFront KeyValueStore whose `release:current` the viewer gate reads. */
  kvs: string;
  recorded_at: string;
}

function validRelease(r: PublishedRelease): boolean {
  return (
    Boolean(r) &&
    typeof r.release === 'string' &&
    RELEASE_NAME.test(r.release) &&
    typeof r.manifest_sha256 === 'string' &&
    SHA256_HEX.test(r.manifest_sha256) &&
    typeof r.published_at === 'string'
  );
}

export function parsePointer(text: string): ReleasePointer {
  const p = JSON.parse(text) as ReleasePointer;
  if (!p || p.format !== STORE_FORMAT || !validRelease(p))
    throw new Error(`not an isoatlas release pointer of format ${STORE_FORMAT}`);
  return p;
}

export function parseHistory(text: string): ReleaseHistory {
  const h = JSON.parse(text) as ReleaseHistory;
  const valid = (list: unknown) => Array.isArray(list) && list.every((r) => validRelease({ published_at: '', ...r }));
  const unpinned =
    h?.unpinned === undefined ||
    (Array.isArray(h.unpinned) &&
      h.unpinned.every((u) => u && typeof u.release === 'string' && typeof u.unpinned_at === 'string'));
  const names =
    h?.names === undefined ||
    (typeof h.names === 'object' &&
      h.names !== null &&
      Object.values(h.names).every((sha) => typeof sha === 'string' && SHA256_HEX.test(sha)));
  const gc =
    h?.gc === undefined ||
    (typeof h.gc === 'object' &&
      h.gc !== null &&
      Number.isInteger(h.gc.epoch) &&
      (h.gc.deleting_since === undefined || typeof h.gc.deleting_since === 'string'));
  if (
    !h ||
    h.format !== STORE_FORMAT ||
    !valid(h.releases) ||
    !valid(h.pending) ||
    !valid(h.retired) ||
    !unpinned ||
    !names ||
    !gc
  ) {
    throw new Error(`not an isoatlas release history of format ${STORE_FORMAT}`);
  }
  return h;
}

export const emptyHistory = (): ReleaseHistory => ({ format: STORE_FORMAT, releases: [], pending: [], retired: [] });

/** The manifest sha256 each release name of the history stands for: the names record, and the
 * entries of stores written before it existed. */
export function usedNames(h: ReleaseHistory): Map<string, string> {
  const names = new Map(Object.entries(h.names ?? {}));
  for (const r of [...h.retired, ...h.pending, ...h.releases])
    if (!names.has(r.release)) names.set(r.release, r.manifest_sha256);
  return names;
}

export function parseEdgeRecord(text: string): EdgeRecord {
  const e = JSON.parse(text) as EdgeRecord;
  if (!e || e.format !== STORE_FORMAT || typeof e.kvs !== 'string' || typeof e.recorded_at !== 'string')
    throw new Error(`not an isoatlas edge record of format ${STORE_FORMAT}`);
  return e;
}
