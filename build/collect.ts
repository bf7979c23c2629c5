// `isoatlas gc`: deletes the objects of a store that no release references any more. Kept, pending
// and recently retired releases protect everything their manifests list; an object is deleted only
// when none of them references it and it is older than the grace period, which must outlast every
// cache lifetime (a cached answer may still point into a retired release) and every publish (whose
// pending entry protects what it relies on). Before each batch of deletions the history is read
// again, and a change starts the count over.
//
// The CDN answers from the release its KeyValueStore pins, which need not be the pointer's (a
// publish without it, before the store recorded it): gc reads the pin itself, at gc time, from the
// KeyValueStore the store records, and keeps that release's objects whatever the history says, as
// well as those of every release pinned within the grace period (the history's `unpinned`). A
// KeyValueStore it cannot read means nothing is deleted.
import { DeleteObjectsCommand, type S3Client } from '@aws-sdk/client-s3';
import { objectKey, type ReleaseHistory } from '../edge/contract/store.js';
import { treePaths } from '../edge/contract/tree.js';
import { loadManifest } from './manifest-reader.js';
import { StoreBucket } from './store-bucket.js';
import { UsageError } from './errors.js';
import { StorageError } from './storage-errors.js';
import { readPin, resolvePin, type KvsAccess } from './edge-pin.js';

/** Longer than the API's longest cache lifetime at the CDN (a day) with room to spare. */
export const DEFAULT_GRACE_HOURS = 48;

export interface CollectOptions {
  s3: S3Client;
  bucket: string;
  prefix?: string;
  graceHours?: number;
  dryRun?: boolean;
  now?: () => Date;
  log?: (line: string) => void;
  /** How to reach the KeyValueStore the store records (edge.json); needed when it records one. */
  kvs?: KvsAccess;
}

export interface CollectSummary {
  /** Objects referenced by a protected release. */
  referenced: number;
  deleted: number;
  bytesDeleted: number;
  /** Unreferenced objects younger than the grace period, left for a later run. */
  young: number;
  /** Retired (or abandoned pending) releases whose grace period ended, dropped from the history. */
  dropped: string[];
  /** The release the CDN's KeyValueStore pinned when gc read it (null without a KeyValueStore, or
   * when it names none). */
  pinned: string | null;
}

const MAX_ROUNDS = 5;

export async function collectGarbage(opts: CollectOptions): Promise<CollectSummary> {
  const graceHours = opts.graceHours ?? DEFAULT_GRACE_HOURS;
  if (!(graceHours >= 0)) throw new UsageError('--grace-hours must be a number ≥ 0');
  const store = new StoreBucket(opts.s3, opts.bucket, opts.prefix);
  const now = opts.now ?? (() => new Date());
  const log = opts.log ?? (() => {});
  const cutoff = now().getTime() - graceHours * 3_600_000;
  const expired = (at: string) => Date.parse(at) < cutoff;
  const pin = await resolvePin(store, opts.kvs, 'gc');
  const readPinned = async () => (pin ? ((await readPin(pin, 'gc deleted nothing')) ?? null) : null);

  for (let round = 1; round <= MAX_ROUNDS; round++) {
    const history = await store.history();
    const pinned = await readPinned();
    const pins = pinnedReleases(history, pinned, expired, store.where, log);
    const protectedReleases = [
      ...history.releases,
      ...history.pending.filter((p) => !expired(p.started_at) || pins.has(p.release)),
      ...history.retired.filter((r) => !expired(r.retired_at) || pins.has(r.release)),
    ];
    const referenced = new Set<string>();
    const manifests = new Map<string, Set<string>>();
    for (const r of protectedReleases) {
      let objects = manifests.get(r.manifest_sha256);
      if (!objects) {
        objects = await referencedBy(store, r.release, r.manifest_sha256);
        manifests.set(r.manifest_sha256, objects);
      }
      for (const sha of objects) referenced.add(sha);
    }
    const listed = await store.objects();
    const doomed = [...listed].filter(([sha, o]) => !referenced.has(sha) && o.modified.getTime() < cutoff);
    const young = [...listed.keys()].filter((sha) => !referenced.has(sha)).length - doomed.length;
    const summary: CollectSummary = { referenced: referenced.size, deleted: 0, bytesDeleted: 0, young, dropped: [], pinned };
    if (opts.dryRun) {
      summary.deleted = doomed.length;
      summary.bytesDeleted = doomed.reduce((n, [, o]) => n + o.size, 0);
      return summary;
    }
    let changed = false;
    for (let i = 0; i < doomed.length; i += 1000) {
      // Someone published, retired or rolled back meanwhile, or moved the pin: count again.
      if (!sameHistory(await store.history(), history) || (await readPinned()) !== pinned) {
        changed = true;
        break;
      }
      const batch = doomed.slice(i, i + 1000);
      await opts.s3.send(new DeleteObjectsCommand({ Bucket: opts.bucket, Delete: { Objects: batch.map(([sha]) => ({ Key: store.prefix + objectKey(sha) })), Quiet: true } }));
      summary.deleted += batch.length;
      summary.bytesDeleted += batch.reduce((n, [, o]) => n + o.size, 0);
    }
    if (changed) {
      log(`the history changed while collecting (round ${round}); counting again`);
      continue;
    }
    await store.updateHistory((h) => {
      // A pinned release keeps its entry: its manifest is how a later gc knows what to keep.
      const pending = h.pending.filter((p) => !expired(p.started_at) || pins.has(p.release));
      const retired = h.retired.filter((r) => !expired(r.retired_at) || pins.has(r.release));
      const unpinned = h.unpinned?.filter((u) => !expired(u.unpinned_at));
      summary.dropped = [...h.pending.filter((p) => !pending.includes(p)), ...h.retired.filter((r) => !retired.includes(r))].map((r) => r.release);
      const unpinnedDropped = (h.unpinned?.length ?? 0) !== (unpinned?.length ?? 0);
      return summary.dropped.length || unpinnedDropped ? { ...h, pending, retired, ...(unpinned ? { unpinned } : {}) } : null;
    });
    return summary;
  }
  throw new Error(`the history of ${store.where} kept changing while collecting (${MAX_ROUNDS} rounds); run gc again when publishing is quiet`);
}

/** The releases the CDN pins now or pinned within the grace period. The one pinned now must be in
 * the history: otherwise what it references is unknown, and nothing may be deleted. */
function pinnedReleases(history: ReleaseHistory, pinned: string | null, expired: (at: string) => boolean, where: string, log: (line: string) => void): Set<string> {
  const listed = new Set([...history.releases, ...history.pending, ...history.retired].map((r) => r.release));
  if (pinned !== null && !listed.has(pinned)) {
    // Exit 4 like an unreadable pin: the store and its KeyValueStore disagree, not the command line.
    throw new StorageError(
      `the CDN's KeyValueStore pins release ${pinned}, which ${where}releases.json no longer lists, so its objects are unknown; gc deleted nothing. ` +
        'Pin a kept release (`isoatlas rollback --to <release>`, see `isoatlas releases`) or publish that release again, then run gc again',
    );
  }
  const pins = new Set(pinned === null ? [] : [pinned]);
  for (const u of history.unpinned ?? []) {
    if (expired(u.unpinned_at)) continue;
    if (listed.has(u.release)) pins.add(u.release);
    else log(`release ${u.release} was pinned until ${u.unpinned_at} but ${where}releases.json no longer lists it: its objects cannot be kept`);
  }
  return pins;
}

/** Every object a release's manifest references: the manifest itself, its shards, its files. */
async function referencedBy(store: StoreBucket, release: string, manifestSha: string): Promise<Set<string>> {
  const manifest = await loadManifest(async (path, listed) => {
    const got = await store.get(objectKey(path === treePaths.manifest ? manifestSha : listed!.sha256));
    return got?.body ?? null;
  }, `${store.where} (release ${release}) `).catch((err: Error) => {
    // Refuse to collect anything when a protected release cannot be read: its objects are unknown.
    throw new Error(`${err.message}; nothing was deleted`);
  });
  return new Set([manifestSha, ...manifest.shards.map((s) => s.entry.sha256), ...manifest.entries.map((e) => e.sha256)]);
}

function sameHistory(a: ReleaseHistory, b: ReleaseHistory): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
