// Garbage collection of a store over any backend: `isoatlas gc` on a bucket (collect.ts), and a
// mirror's clean-up of its directory (edge/mirror/mirror.ts). Deletes the objects of a store that no
// release references any more. Kept, pending and recently retired releases protect everything their
// manifests list; an object is deleted only when none of them references it and it is older than
// the grace period, which must outlast every cache lifetime (a cached answer may still point into a
// retired release) and every publish (whose pending entry protects what it relies on). Before each
// batch of deletions the history is read again, and a change starts the count over.
//
// The CDN answers from the release its KeyValueStore pins, which need not be the pointer's (a
// publish without it, before the store recorded it): gc reads the pin itself, at gc time, through
// the reader collect.ts gives it for the KeyValueStore the store records, and keeps that release's
// objects whatever the history says, as well as those of every release pinned within the grace
// period (the history's `unpinned`). A KeyValueStore it cannot read means nothing is deleted. The
// release current.json names is kept too, whatever the history says (a pointer write that lost its
// race cannot happen, but a store edited by hand or by an older version may have one).
//
// A publish relies on objects it found in the store; it must learn when gc may have deleted some:
// gc marks the history (GcState: a new epoch and `deleting_since`) before its first deletion and
// clears the mark (another epoch) after its last, both conditional writes, and a publish compares
// (publish.ts). gc also never deletes an object written after the oldest pending publish started
// (S3's LastModified against the pending entry's start, less the clock skew S3 tolerates), so a
// publish's own uploads survive even when its pending entry is older than the grace period.
//
// The grace period must outlast the CDN's cached answers and a stalled publish or rollback between
// reading the history and moving the pointer: below SAFE_GRACE_HOURS gc refuses unless --force.
import {
  objectKey,
  type PublishedRelease,
  type ReleaseHistory,
  type ReleasePointer,
} from '../../edge/contract/store-layout.js';
import { treePaths } from '../../edge/contract/tree.js';
import { parseManifestIndex } from '../../edge/contract/manifest.js';
import { parsePackList } from '../../edge/contract/packs.js';
import { eachShard, readManifestIndex, type ManifestRead } from '../common/manifest-reader.js';
import type { ReleaseStore } from '../../edge/store/release-store.js';
import { UsageError } from '../common/errors.js';
import { StorageError } from '../common/storage-errors.js';
import { DEFAULT_GRACE_HOURS, SAFE_GRACE_HOURS } from './grace.js';
import { SweepLedger, type Doomed } from './sweep-ledger.js';

/** S3 refuses signed requests whose clock is further than this from its own, so a publisher's
 * clock (a pending entry's start) and S3's (LastModified) differ by less. */
const CLOCK_SKEW_MS = 15 * 60_000;

/** What the CDN pins now: a release name, or null when it names none. */
export type PinReader = () => Promise<string | null>;

export interface SweepOptions {
  graceHours?: number;
  dryRun?: boolean;
  now?: () => Date;
  log?: (line: string) => void;
  /** Finds the CDN's pin (checked reachable), or null for a store without one; called once, after
   * the grace period is checked and before anything is written. */
  pin?: () => Promise<PinReader | null>;
  /** Accept a grace period shorter than SAFE_GRACE_HOURS. */
  force?: boolean;
  /** As publish's: skip the check that the server honours conditional writes. */
  unsafeSingleWriter?: boolean;
  /** How far a publisher's clock may be from the server's (tests on one machine make it small). */
  clockSkewMs?: number;
}

export interface CollectSummary {
  /** Objects referenced by a protected release. */
  referenced: number;
  deleted: number;
  bytesDeleted: number;
  /** Unreferenced objects younger than the grace period (or than the oldest pending publish), left
   * for a later run. */
  young: number;
  /** The same for packs (edge/contract/packs.ts): those a protected release's pack list names are
   * referenced; the others are deleted after the grace period, as objects are. */
  packs: { referenced: number; deleted: number; bytesDeleted: number; young: number };
  /** Retired (or abandoned pending) releases whose grace period ended, dropped from the history. */
  dropped: string[];
  /** The release the CDN's KeyValueStore pinned when gc read it (null without a KeyValueStore, or
   * when it names none). */
  pinned: string | null;
}

const MAX_ROUNDS = 5;

/** Deletions per request (S3's DeleteObjects takes at most 1,000 keys), between checks of the history. */
const DELETE_BATCH = 1000;

/** Refuses a grace period that is not a number ≥ 0, or shorter than the safe one without `force`. */
export function checkGrace(graceHours: number, force: boolean | undefined, log: (line: string) => void): void {
  if (!(graceHours >= 0)) throw new UsageError('--grace-hours must be a number ≥ 0');
  if (graceHours < SAFE_GRACE_HOURS) {
    const risk = `cached API answers may still point into releases retired that recently, and a publish or rollback stalled longer than that may point current.json at a release whose objects are gone`;
    if (!force)
      throw new UsageError(
        `--grace-hours ${graceHours} is shorter than the safe ${SAFE_GRACE_HOURS} h: ${risk}. Use --grace-hours ${SAFE_GRACE_HOURS} or more, or add --force if you know neither can happen`,
      );
    log(`warning: --grace-hours ${graceHours} is shorter than the safe ${SAFE_GRACE_HOURS} h (--force): ${risk}`);
  }
}

export async function sweepStore(store: ReleaseStore, opts: SweepOptions): Promise<CollectSummary> {
  const graceHours = opts.graceHours ?? DEFAULT_GRACE_HOURS;
  const log = opts.log ?? (() => {});
  checkGrace(graceHours, opts.force, log);
  const now = opts.now ?? (() => new Date());
  const cutoff = now().getTime() - graceHours * 3_600_000;
  const expired = (at: string) => Date.parse(at) < cutoff;
  const readPin = opts.pin ? await opts.pin() : null;
  if (!opts.unsafeSingleWriter && !opts.dryRun) await store.checkConditionalWrites('gc');
  const readPinned = async () => (readPin ? readPin() : null);

  const ledger = new SweepLedger();
  try {
    for (let round = 1; round <= MAX_ROUNDS; round++) {
      const pointer = await store.pointer();
      let history = await store.history();
      const pinned = await readPinned();
      const pins = pinnedReleases(history, pinned, expired, store.where, log);
      const protectedReleases: PublishedRelease[] = [
        ...history.releases,
        ...history.retired.filter((r) => !expired(r.retired_at) || pins.has(r.release)),
        ...(pointer ? [pointer] : []),
      ];
      // What the protected releases reference, and what is to go, are counted on disk (sweep-ledger.ts).
      ledger.clear();
      // A protected release whose pack list cannot be read may name any pack: none is deleted then.
      const packsUnknown: string[] = [];
      const manifestsRead = new Set<string>();
      const addReferenced = async (r: { release: string; manifest_sha256: string }) => {
        if (manifestsRead.has(r.manifest_sha256)) return;
        await referenceRelease(store, ledger, r.release, r.manifest_sha256);
        const packs = await packsReferencedBy(store, r.manifest_sha256);
        manifestsRead.add(r.manifest_sha256);
        if (!packs) packsUnknown.push(r.release);
        ledger.reference('object', packs?.objects ?? []);
        ledger.reference('pack', packs?.packs ?? []);
      };
      for (const r of protectedReleases) await addReferenced(r);
      for (const p of history.pending.filter((p) => !expired(p.started_at) || pins.has(p.release))) {
        // A pending release whose manifest is gone cannot say what it references: its publish finds
        // that out itself (the gc epoch) and uploads again what it lacks.
        await addReferenced(p).catch((err: Error) =>
          log(
            `pending release ${p.release} cannot be read (${err.message.replace(/; nothing was deleted$/, '')}): its publish will check its objects again`,
          ),
        );
      }
      // Objects written since the oldest pending publish started may be that publish's.
      const oldestPending = Math.min(
        ...history.pending.map((p) => Date.parse(p.started_at) - (opts.clockSkewMs ?? CLOCK_SKEW_MS)),
      );
      const old = (o: { modified: Date }) => o.modified.getTime() < cutoff && o.modified.getTime() < oldestPending;
      let young = 0;
      let youngPacks = 0;
      let listedPacks = 0;
      // Each slice looked up in sha256 order: the ledger then reads each block of its tables once.
      await store.eachObjectSlice((slice) => {
        const unreferenced = bySha(slice).filter((o) => !ledger.isReferenced('object', o.sha));
        const doomed = unreferenced.filter(old);
        young += unreferenced.length - doomed.length;
        ledger.doom(doomed.map((o) => ({ sha: o.sha, size: o.size, pack: false })));
      });
      await store.eachPackSlice((slice) => {
        listedPacks += slice.length;
        const unreferenced = bySha(slice).filter((o) => !ledger.isReferenced('pack', o.sha));
        const doomed = packsUnknown.length ? [] : unreferenced.filter(old);
        youngPacks += unreferenced.length - doomed.length;
        ledger.doom(doomed.map((o) => ({ sha: o.sha, size: o.size, pack: true })));
      });
      if (packsUnknown.length && listedPacks)
        log(
          `the pack list of release ${packsUnknown.join(', ')} is missing from ${store.where}, so which packs it names is unknown: no pack is deleted this time`,
        );
      const summary: CollectSummary = {
        referenced: ledger.referencedCount('object'),
        deleted: 0,
        bytesDeleted: 0,
        young,
        packs: {
          referenced: ledger.referencedCount('pack'),
          deleted: 0,
          bytesDeleted: 0,
          young: youngPacks,
        },
        dropped: [],
        pinned,
      };
      const count = (batch: Doomed[]) => {
        for (const d of batch) {
          const to = d.pack ? summary.packs : summary;
          to.deleted += 1;
          to.bytesDeleted += d.size;
        }
      };
      if (opts.dryRun) {
        for (const batch of ledger.doomedBatches(DELETE_BATCH)) count(batch);
        return summary;
      }
      let changed = false;
      let marked = false;
      try {
        for (const batch of ledger.doomedBatches(DELETE_BATCH)) {
          // Someone published, retired or rolled back meanwhile, or moved the pin: count again.
          const unchanged = (h: ReleaseHistory) => sameHistory(h, history);
          if (!marked) {
            // The mark is written only on the history counted from, so no publish slips in between.
            const before = history;
            history = await store.updateHistory((h) =>
              unchanged(h)
                ? { ...h, gc: { epoch: (h.gc?.epoch ?? 0) + 1, deleting_since: now().toISOString() } }
                : null,
            );
            marked = history !== before && !sameHistory(history, before);
            if (!marked) changed = true;
          } else if (!unchanged(await store.history())) changed = true;
          if (!changed && (!samePointer(await store.pointer(), pointer) || (await readPinned()) !== pinned))
            changed = true;
          if (changed) break;
          await store.deleteObjects(batch.filter((d) => !d.pack).map((d) => d.sha));
          await store.deletePacks(batch.filter((d) => d.pack).map((d) => d.sha));
          count(batch);
        }
      } finally {
        // The mark comes off whatever happened, once no deletion is in flight.
        if (marked) await store.updateHistory((h) => ({ ...h, gc: { epoch: (h.gc?.epoch ?? 0) + 1 } }));
      }
      if (changed) {
        log(`the history changed while collecting (round ${round}); counting again`);
        continue;
      }
      await store.updateHistory((h) => {
        // A pinned release keeps its entry: its manifest is how a later gc knows what to keep.
        const pending = h.pending.filter((p) => !expired(p.started_at) || pins.has(p.release));
        const retired = h.retired.filter(
          (r) => !expired(r.retired_at) || pins.has(r.release) || r.release === pointer?.release,
        );
        const unpinned = h.unpinned?.filter((u) => !expired(u.unpinned_at));
        summary.dropped = [
          ...h.pending.filter((p) => !pending.includes(p)),
          ...h.retired.filter((r) => !retired.includes(r)),
        ].map((r) => r.release);
        const unpinnedDropped = (h.unpinned?.length ?? 0) !== (unpinned?.length ?? 0);
        // A mark left by a gc that was killed while deleting would make every publish wait for it.
        const stale = Boolean(h.gc?.deleting_since);
        if (!summary.dropped.length && !unpinnedDropped && !stale) return null;
        if (stale) log(`cleared the mark of a gc that started deleting at ${h.gc!.deleting_since} and did not finish`);
        // Dropping a pending entry ends its protection: a new epoch tells its publish to check again.
        const gc = pending.length !== h.pending.length || stale ? { gc: { epoch: (h.gc?.epoch ?? 0) + 1 } } : {};
        return { ...h, pending, retired, ...(unpinned ? { unpinned } : {}), ...gc };
      });
      return summary;
    }
    throw new Error(
      `the history of ${store.where} kept changing while collecting (${MAX_ROUNDS} rounds); run gc again when publishing is quiet`,
    );
  } finally {
    ledger.close();
  }
}

const bySha = <T extends { sha: string }>(slice: T[]) =>
  slice.sort((a, b) => (a.sha < b.sha ? -1 : a.sha > b.sha ? 1 : 0));

/** The releases the CDN pins now or pinned within the grace period. The one pinned now must be in
 * the history: otherwise what it references is unknown, and nothing may be deleted. */
function pinnedReleases(
  history: ReleaseHistory,
  pinned: string | null,
  expired: (at: string) => boolean,
  where: string,
  log: (line: string) => void,
): Set<string> {
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
    else
      log(
        `release ${u.release} was pinned until ${u.unpinned_at} but ${where}releases.json no longer lists it: its objects cannot be kept`,
      );
  }
  return pins;
}

/** Records every object a release's manifest references: the manifest itself, its shard objects (each
 * head and the chain of bases it lists, manifest-reader.ts), its files; a shard at a time. */
async function referenceRelease(
  store: ReleaseStore,
  ledger: SweepLedger,
  release: string,
  manifestSha: string,
): Promise<void> {
  const read: ManifestRead = async (path, listed) => {
    const got = await store.get(objectKey(path === treePaths.manifest ? manifestSha : listed!.sha256));
    return got?.body ?? null;
  };
  const where = `${store.where} (release ${release}) `;
  try {
    const { index } = await readManifestIndex(read, where);
    ledger.reference('object', [manifestSha]);
    await eachShard(read, index, where, (_i, { shard, objects }) => {
      ledger.reference(
        'object',
        objects.map((o) => o.entry.sha256),
      );
      ledger.reference(
        'object',
        shard.entries.map((e) => e.sha256),
      );
    });
  } catch (err) {
    // Refuse to collect anything when a protected release cannot be read: its objects are unknown.
    throw new Error(`${(err as Error).message}; nothing was deleted`);
  }
}

/** What a release's pack list references: the list and its pack indexes (objects), and its packs;
 * nothing for a release published before packs; null when its pack list is missing. */
interface PacksReferenced {
  objects: string[];
  packs: string[];
}

async function packsReferencedBy(store: ReleaseStore, manifestSha: string): Promise<PacksReferenced | null> {
  // referencedBy read and checked the same manifest just before.
  const manifest = await store.get(objectKey(manifestSha));
  const packs = manifest
    ? parseManifestIndex(manifest.body, `${store.where}${objectKey(manifestSha)}`).packs
    : undefined;
  if (!packs) return { objects: [], packs: [] };
  const list = await store.get(objectKey(packs.sha256));
  if (!list) return null;
  const refs = parsePackList(list.body, `${store.where}${objectKey(packs.sha256)}`).packs;
  return { objects: [packs.sha256, ...refs.map((p) => p.index.sha256)], packs: refs.map((p) => p.sha256) };
}

function sameHistory(a: ReleaseHistory, b: ReleaseHistory): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const samePointer = (a: ReleasePointer | null, b: ReleasePointer | null) => JSON.stringify(a) === JSON.stringify(b);
