// A mirror's clean-up: what gc (build/publish/sweep.ts) does to a store, done in memory that does
// not grow with the release. Objects no protected release lists (the held ones, those retired within
// the grace period, pending ones) are deleted once older than the grace period, and the history
// drops the entries whose grace ended. gc holds every referenced sha256 and every listed object in
// memory; here the referenced ones are the sync's scratch tables (sync-scratch.ts: the held
// releases' objects are there already, the other protected releases' are added shard by shard), and
// the objects are walked one folder of `objects/` at a time. A mirror holds no packs (`isoatlas
// serve` rebuilds them from objects) and no pin, so neither is looked at.
//
// As gc does, it marks the history before its first deletion and clears the mark after its last, and
// stops deleting when the history or the pointer changes meanwhile (a mirror has one writer at a
// time, so the next sync goes on).
import {
  objectKey,
  objectSha,
  type PublishedRelease,
  type ReleaseHistory,
  type ReleasePointer,
} from '../contract/store-layout.js';
import { treePaths } from '../contract/tree.js';
import { parseManifestIndex } from '../contract/manifest.js';
import { parsePackList } from '../contract/packs.js';
import { loadShard, ManifestProblem } from '../../build/common/manifest-reader.js';
import { forEachLimited } from '../../build/common/concurrency.js';
import { checkGrace } from '../../build/publish/sweep.js';
import type { ReleaseStore } from '../store/release-store.js';
import type { DirectoryBackend } from '../store/directory-backend.js';
import type { SyncScratch } from './sync-scratch.js';

/** Objects deleted at once, between two looks at the history. */
const DELETE_BATCH = 1000;
const SHARDS_IN_FLIGHT = 8;

export interface CleanUpOptions {
  graceHours: number;
  force?: boolean;
  now?: () => Date;
  log: (line: string) => void;
}

/** Deletes the objects of the mirror no protected release lists, older than the grace period, and
 * answers how many. `scratch` lists what the held releases (the history's `releases`) reference. */
export async function cleanUpMirror(
  store: ReleaseStore,
  backend: DirectoryBackend,
  scratch: SyncScratch,
  o: CleanUpOptions,
): Promise<number> {
  checkGrace(o.graceHours, o.force, o.log);
  const now = o.now ?? (() => new Date());
  const cutoff = now().getTime() - o.graceHours * 3_600_000;
  const expired = (at: string) => Date.parse(at) < cutoff;
  await store.checkConditionalWrites('gc');
  const pointer = await store.pointer();
  let history = await store.history();
  const held = new Set(history.releases.map((r) => r.manifest_sha256));
  const others: PublishedRelease[] = [
    ...history.retired.filter((r) => !expired(r.retired_at)),
    ...(pointer ? [pointer] : []),
  ].filter((r) => !held.has(r.manifest_sha256) && (held.add(r.manifest_sha256), true));
  for (const r of history.releases) await listPackMetadata(store, scratch, r.manifest_sha256);
  for (const r of others) await listReferenced(store, scratch, r);
  for (const p of history.pending.filter((p) => !expired(p.started_at))) {
    if (held.has(p.manifest_sha256)) continue;
    held.add(p.manifest_sha256);
    await listReferenced(store, scratch, p).catch((err: Error) =>
      o.log(
        `pending release ${p.release} cannot be read (${err.message.replace(/; nothing was deleted$/, '')}): its publish will check its objects again`,
      ),
    );
  }
  const oldestPending = Math.min(...history.pending.map((p) => Date.parse(p.started_at)));
  const old = (modified: Date) => modified.getTime() < cutoff && modified.getTime() < oldestPending;

  let deleted = 0;
  let marked = false;
  let changed = false;
  const unchanged = async () =>
    sameHistory(await store.history(), history) && samePointer(await store.pointer(), pointer);
  try {
    for (let folder = 0; folder < 256 && !changed; folder++) {
      const prefix = `objects/${folder.toString(16).padStart(2, '0')}/`;
      const listed = (await backend.list(prefix)).flatMap((l) => {
        const sha = objectSha(l.key);
        return sha ? [{ sha, modified: l.modified }] : [];
      });
      const kept = scratch.listed(listed.map((l) => l.sha));
      const doomed = listed.filter((l) => !kept.has(l.sha) && old(l.modified)).map((l) => l.sha);
      for (let i = 0; i < doomed.length; i += DELETE_BATCH) {
        if (!marked) {
          // The mark is written only on the history counted from, so no publish slips in between.
          const before = history;
          history = await store.updateHistory((h) =>
            sameHistory(h, before)
              ? { ...h, gc: { epoch: (h.gc?.epoch ?? 0) + 1, deleting_since: now().toISOString() } }
              : null,
          );
          marked = history !== before && !sameHistory(history, before);
          if (!marked || !samePointer(await store.pointer(), pointer)) changed = true;
        } else if (!(await unchanged())) changed = true;
        if (changed) break;
        const batch = doomed.slice(i, i + DELETE_BATCH);
        await store.deleteObjects(batch);
        deleted += batch.length;
      }
    }
  } finally {
    // The mark comes off whatever happened, once no deletion is in flight.
    if (marked) await store.updateHistory((h) => ({ ...h, gc: { epoch: (h.gc?.epoch ?? 0) + 1 } }));
  }
  if (changed) {
    o.log("the mirror's history changed while its clean-up was deleting: the next sync goes on with it");
    return deleted;
  }
  await store.updateHistory((h) => dropExpired(h, expired, pointer, o.log));
  return deleted;
}

/** The history without the pending and retired entries (and unpinnings) whose grace ended, and
 * without a mark a killed gc left; null when nothing changes. */
function dropExpired(
  h: ReleaseHistory,
  expired: (at: string) => boolean,
  pointer: ReleasePointer | null,
  log: (line: string) => void,
): ReleaseHistory | null {
  const pending = h.pending.filter((p) => !expired(p.started_at));
  const retired = h.retired.filter((r) => !expired(r.retired_at) || r.release === pointer?.release);
  const unpinned = h.unpinned?.filter((u) => !expired(u.unpinned_at));
  const dropped = pending.length !== h.pending.length || retired.length !== h.retired.length;
  const unpinnedDropped = (h.unpinned?.length ?? 0) !== (unpinned?.length ?? 0);
  const stale = Boolean(h.gc?.deleting_since);
  if (!dropped && !unpinnedDropped && !stale) return null;
  if (stale) log(`cleared the mark of a gc that started deleting at ${h.gc!.deleting_since} and did not finish`);
  // Dropping a pending entry ends its protection: a new epoch tells its publish to check again.
  const gc = pending.length !== h.pending.length || stale ? { gc: { epoch: (h.gc?.epoch ?? 0) + 1 } } : {};
  return { ...h, pending, retired, ...(unpinned ? { unpinned } : {}), ...gc };
}

/** Adds what a release the mirror does not hold but protects references: its manifest, shard
 * objects and files, pack list and pack indexes, read from the mirror shard by shard. A manifest
 * that cannot be read means its objects are unknown: nothing is deleted. */
async function listReferenced(
  store: ReleaseStore,
  scratch: SyncScratch,
  r: { release: string; manifest_sha256: string },
): Promise<void> {
  const where = `${store.where} (release ${r.release}) `;
  const failed = (problem: string) => new Error(`${problem}; nothing was deleted`);
  const indexBody = (await store.get(objectKey(r.manifest_sha256)))?.body;
  if (!indexBody) throw failed(`${where} has no ${treePaths.manifest}: not a rendered isoatlas tree`);
  let index: ReturnType<typeof parseManifestIndex>;
  try {
    index = parseManifestIndex(indexBody, `${where}${treePaths.manifest}`);
  } catch (err) {
    throw failed((err as Error).message);
  }
  scratch.addReferenced(r.manifest_sha256);
  const read = async (_path: string, listed?: { sha256: string }) =>
    (await store.get(objectKey(listed!.sha256)))?.body ?? null;
  await forEachLimited([...index.shards.keys()], SHARDS_IN_FLIGHT, async (i) => {
    try {
      const { shard, objects } = await loadShard(read, index, i, where);
      for (const { entry } of objects) scratch.addReferenced(entry.sha256);
      for (const e of shard.entries) scratch.addReferenced(e.sha256);
    } catch (err) {
      throw err instanceof ManifestProblem ? failed(err.message) : err;
    }
  });
  await listPackMetadata(store, scratch, r.manifest_sha256);
}

/** Adds a release's pack list and pack indexes, when the mirror has its list (a sync without packs
 * reads neither, yet keeps those an earlier sync read). */
async function listPackMetadata(store: ReleaseStore, scratch: SyncScratch, manifestSha: string): Promise<void> {
  const manifest = await store.get(objectKey(manifestSha));
  const packs = manifest
    ? parseManifestIndex(manifest.body, `${store.where}${objectKey(manifestSha)}`).packs
    : undefined;
  if (!packs) return;
  const list = await store.get(objectKey(packs.sha256));
  if (!list) return;
  scratch.addReferenced(packs.sha256);
  for (const p of parsePackList(list.body, `${store.where}${objectKey(packs.sha256)}`).packs)
    scratch.addReferenced(p.index.sha256);
}

function sameHistory(a: ReleaseHistory, b: ReleaseHistory): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const samePointer = (a: ReleasePointer | null, b: ReleasePointer | null) => JSON.stringify(a) === JSON.stringify(b);
