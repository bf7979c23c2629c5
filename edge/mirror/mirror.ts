// `isoatlas mirror`: copies releases of a published atlas into a local store (the layout of
// edge/contract/store-layout.ts: objects by sha256, releases.json, current.json) that `isoatlas serve --dir`
// serves, pinning included, and that another mirror can sync from in turn.
//   - Sources: a published store read with the S3 API (s3://bucket/prefix), or over HTTP (the CDN, or
//     a running `isoatlas serve` of another mirror), or a rendered tree on a static host (one release).
//   - Every object is stored once, whatever number of releases list it, and every download is checked
//     against its sha256 before it is written (atomically, under its final name).
//   - Objects already in the mirror are checked and kept; what is missing or corrupted is downloaded.
//     Checked: by one stat when the verified index (verified-index.ts) recorded the object with the
//     stat its file still has, else by size and sha256; objects `isoatlas serve` refused
//     (refused-record.ts) are hashed again, and `verify` hashes everything. Manifest shards a finished
//     sync held whole are not read again while the disk agrees (verified-shards.ts), so a re-sync
//     looks at what changed. An interrupted sync leaves
//     what it verified, and the next run goes on from there; the mirror's own pointer is rewritten
//     last, so a server of the mirror switches from one whole release to the next.
//   - A source that answers 429 or 503 is waited for (its Retry-After, else a growing backoff), and
//     the wait is said with its reason (on the progress bar, or as a log line).
//   - `mirror.json` records the source and the last sync.
//   - The mirror's directory is a store (edge/store/: a ReleaseStore over a DirectoryBackend), written
//     as publish writes a bucket: objects under their sha256, then the history and the pointer, each
//     a conditional write. Releases it no longer holds are retired in its history, and their objects
//     are deleted as `isoatlas gc` deletes them (build/publish/sweep.ts, in bounded memory): only after
//     the grace period, since a client of the mirror may still follow links into them.
//   - Memory does not grow with the release: what the releases list, where packs hold it and what
//     is missing are scratch tables on disk (sync-scratch.ts), read back in bounded pages; the
//     verified index is searched and merged on disk (verified-index.ts).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  HISTORY_KEY,
  POINTER_KEY,
  PROBE_KEY,
  STORE_FORMAT,
  emptyHistory,
  objectKey,
  parseHistory,
  parsePointer,
  type PublishedRelease,
  type ReleaseHistory,
  type ReleasePointer,
} from '../contract/store-layout.js';
import { DirectoryBackend } from '../store/directory-backend.js';
import { ReleaseStore } from '../store/release-store.js';
import { checkGrace, sweepStore, type CollectSummary } from '../../build/publish/sweep.js';
import { DEFAULT_GRACE_HOURS } from '../../build/publish/grace.js';
import { treePaths, type ManifestIndex } from '../contract/tree.js';
import { OriginError, type Origin } from '../origin.js';
import { HttpOrigin } from '../origins/http-origin.js';
import { BadInputError, UsageError } from '../../build/common/errors.js';
import { StorageError } from '../../build/common/storage-errors.js';
import { sourceError } from './source-errors.js';
import { parseManifestIndex, parseShardObject } from '../contract/manifest.js';
import { startProgress, type Progress } from '../../build/common/progress.js';
import { ManifestProblem, loadShard, type ManifestRead } from '../../build/common/manifest-reader.js';
import { forEachLimited } from '../../build/common/concurrency.js';
import { PackedObjects, RangePlanner, fetchRanges, type PackRange } from './pack-fetch.js';
import { SyncScratch, type Wanted } from './sync-scratch.js';
import { VERIFIED_INDEX, VerifiedIndex, stampOf } from './verified-index.js';
import { REFUSED_RECORD, readRefused, takeRefused } from './refused-record.js';
import { CleanUpState } from './clean-up-due.js';
import { VERIFIED_SHARDS, VerifiedShards, basesDigest } from './verified-shards.js';

export interface MirrorOptions {
  /** An http(s) base URL (a published store, a serving mirror, or a tree root) or `s3://bucket[/prefix]`. */
  from: string;
  /** The mirror directory (a store; created if missing). */
  to: string;
  /** Releases to hold besides the source's current one (each must be kept by the source). */
  releases?: string[];
  /** How many releases the mirror keeps, newest last (default 2; the current one always). */
  keep?: number;
  /** Downloads in flight at once (default 16). */
  concurrency?: number;
  /** S3 only: region (default $AWS_REGION or us-east-1) and an S3-compatible endpoint. */
  region?: string;
  endpoint?: string;
  /** HTTP only: an API key for a CDN that requires one (default $ISOATLAS_API_KEY). */
  apiKey?: string;
  /** Draw a progress bar on an interactive terminal (default true). */
  progress?: boolean;
  log?: (line: string) => void;
  /** How to wait before a retry (tests shorten it). */
  sleep?: (ms: number) => Promise<void>;
  /** How long one request may take (tests shorten it). */
  requestTimeoutMs?: number;
  /** Hours an object no held release lists stays before it is deleted (default DEFAULT_GRACE_HOURS,
   * as gc's --grace-hours): clients of the mirror may still read a release it dropped. */
  graceHours?: number;
  /** Accept a grace period shorter than SAFE_GRACE_HOURS (as gc's --force). */
  force?: boolean;
  /** The clock the clean-up reads (tests move it past the grace period). */
  now?: () => Date;
  /** Read every object on its own, not through packs (benchmarks compare the two; default true). */
  packs?: boolean;
  /** Hash every object the mirror holds, whatever its index of verified objects says; fetch again
   * what fails, and write the index anew (`--verify`). */
  verify?: boolean;
}

export interface MirrorSummary {
  /** The current release, as the source named it. */
  release: string;
  /** Every release the mirror now holds, oldest first. */
  releases: string[];
  /** Objects downloaded. */
  fetched: number;
  /** Objects the mirror already had, checked. */
  reused: number;
  /** Held objects checked by hashing their bytes (new to the index, changed on disk, refused by
   * `isoatlas serve`, or all of them with `verify`). */
  hashed: number;
  /** Held objects trusted without reading them: unchanged on disk since the index recorded them. */
  trusted: number;
  /** Manifest shards of the held releases held whole since the last sync, not read again (their
   * files not looked at one by one: verified-shards.ts). */
  unchanged: number;
  /** Objects no held release lists any more, deleted once their grace period ended. */
  removed: number;
  /** Whether the clean-up ran: only when it may delete something (clean-up-due.ts). */
  swept: boolean;
  /** Bytes downloaded in all (objects, pointer, history). */
  bytes: number;
  /** Requests sent to the source, refused ones and retries included. */
  requests: number;
  /** Requests the source refused with 429 or 503 and that were tried again later. */
  waited: number;
  /** Packs read from, and the ranges read (edge/mirror/pack-fetch.ts). */
  packs: number;
  ranges: number;
  /** Seconds the sync spent waiting for a source that refused (overlapping waits counted once). */
  waitedSeconds: number;
  seconds: number;
}

/** What `mirror.json` says. */
export interface MirrorRecord {
  source: string;
  synced_at: string;
  current: string;
  releases: string[];
}
export const MIRROR_RECORD = 'mirror.json';

export type MirrorSource = { kind: 'http'; base: string } | { kind: 's3'; bucket: string; prefix: string };

const DEFAULT_CONCURRENCY = 16;
const DEFAULT_KEEP = 2;
/** Per request: generous, since a mirror may pull large files over slow links. */
const REQUEST_TIMEOUT_MS = 60_000;
/** Attempts of a request that failed (other than by the source asking us to wait). */
const ATTEMPTS = 2;
/** Attempts of a request the source answered 429 or 503, and the longest wait between them. */
const BUSY_ATTEMPTS = 8;
const MAX_WAIT_MS = 120_000;
/** Shards of a manifest read at once. */
const SHARDS_IN_FLIGHT = 8;
/** Missing objects planned into ranges before those ranges are read: what the plan holds in memory. */
const FETCH_BATCH = 16_384;

/** Parses `--from`; a UsageError (exit 2) when it is neither an http(s) URL nor `s3://bucket[/prefix]`. */
export function parseMirrorSource(from: string): MirrorSource {
  const s3 = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(from);
  if (s3) {
    const prefix = s3[2] ?? '';
    return { kind: 's3', bucket: s3[1], prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/` };
  }
  let url: URL;
  try {
    url = new URL(from);
  } catch {
    url = new URL('invalid:');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.host) {
    throw new UsageError(`--from ${JSON.stringify(from)}: expected an http(s) base URL or s3://bucket[/prefix]`);
  }
  return { kind: 'http', base: from.replace(/\/+$/, '') };
}

export function mirrorSummaryLine(s: MirrorSummary, from: string, to: string): string {
  const waited = s.waited
    ? ` (the source refused ${s.waited} time${s.waited === 1 ? '' : 's'}: waited ${Math.round(s.waitedSeconds)} s)`
    : '';
  return (
    `mirrored release ${s.release} (holding ${s.releases.join(', ')}): ${s.fetched} objects fetched, ${s.reused} reused, ${s.removed} removed; ` +
    `${s.hashed} held objects checked by sha256, ${s.trusted} trusted from the verified index` +
    `${s.unchanged ? `, ${s.unchanged} manifest shards unchanged since the last sync` : ''}; ` +
    `${(s.bytes / 1e6).toFixed(1)} MB downloaded${s.ranges ? ` (${s.ranges} ranges of ${s.packs} packs)` : ''} in ${s.seconds.toFixed(1)} s${waited} (${from} → ${to})`
  );
}

const sha256Of = (body: Uint8Array) => createHash('sha256').update(body).digest('hex');

/** A source, read object by object: a store (pointer, history, objects) or a tree (one release). */
interface Source {
  description: string;
  pointer: ReleasePointer;
  history: ReleaseHistory;
  /** A file of one of its releases: by sha256 in a store, by path in a tree. */
  object(sha256: string, path: string): Promise<Buffer>;
  /** Bytes start..end of a pack (by key), or null when the source has no such pack; absent for a
   * source without packs (a tree). */
  range?(key: string, start: number, end: number): Promise<Buffer | null>;
}

/** What a sync leaves to be saved whether it finishes or not; `finished` once it has. */
interface SyncState {
  local?: LocalObjects;
  scratch?: SyncScratch;
  finished?: Finished;
}

/** What a finished sync knows: the shards it holds whole, and whether its clean-up deleted objects. */
interface Finished {
  shards: VerifiedShards;
  swept: boolean;
}

export async function mirror(opts: MirrorOptions): Promise<MirrorSummary> {
  const objects: SyncState = {};
  try {
    return await sync(opts, objects);
  } finally {
    // Whether the sync succeeded or not, what it verified is kept: the next one does not hash it again.
    try {
      objects.local?.save(opts.log ?? (() => {}), objects.finished);
    } finally {
      objects.scratch?.close();
    }
  }
}

async function sync(opts: MirrorOptions, objects: SyncState): Promise<MirrorSummary> {
  const started = performance.now();
  const log = opts.log ?? (() => {});
  const concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new UsageError(`--concurrency ${concurrency}: expected a positive integer`);
  const keep = opts.keep ?? DEFAULT_KEEP;
  if (!Number.isInteger(keep) || keep < 1) throw new UsageError(`--keep ${keep}: expected a positive integer`);
  const to = resolve(opts.to);
  checkMirrorDir(to);
  const graceHours = opts.graceHours ?? DEFAULT_GRACE_HOURS;
  // Before anything is fetched: a grace period the clean-up would refuse is refused now.
  checkGrace(graceHours, opts.force, () => {});
  const backend = new DirectoryBackend(to);
  const store = new ReleaseStore(backend);
  const counters = { bytes: 0, waited: 0, requests: 0 };
  const waits = new Waits(log);
  const reader = await rawReader(opts, counters, waits);
  const source = await openSource(reader, opts.from);
  const current = source.pointer;

  // 1. Which releases to hold: those held already, those asked for, the current one; the newest `keep`.
  const held = await store.history().catch(() => emptyHistory());
  const known = new Map(
    [...source.history.releases, ...source.history.retired, current].map((r) => [r.release, r] as const),
  );
  for (const name of opts.releases ?? []) {
    if (!known.has(name))
      throw new UsageError(
        `release ${name} is not kept by ${opts.from}; it keeps: ${source.history.releases.map((r) => r.release).join(', ')}`,
      );
  }
  // Asked-for releases are always held; earlier ones fill what room `keep` leaves, newest first.
  const asked = new Set(opts.releases ?? []);
  const order = [...new Set([...held.releases.map((r) => r.release), ...asked])].filter((n) => n !== current.release);
  const room = Math.max(keep - 1 - asked.size, 0);
  const rest = room === 0 ? [] : order.filter((n) => !asked.has(n)).slice(-room);
  const wanted: PublishedRelease[] = order
    .filter((n) => asked.has(n) || rest.includes(n))
    .map((n) => held.releases.find((r) => r.release === n) ?? known.get(n)!);
  wanted.push({
    release: current.release,
    manifest_sha256: current.manifest_sha256,
    published_at: current.published_at,
  });

  // 2. Every object those releases list, into the sync's scratch tables (sync-scratch.ts): their
  // manifests first (from the mirror when it has them), with their pack lists and pack indexes, and
  // their shards read through the packs; then each shard's files, one shard at a time.
  const cleanUpState = CleanUpState.begin(to);
  const scratch = (objects.scratch = SyncScratch.open(to));
  const local = (objects.local = new LocalObjects(store, backend, { verify: opts.verify === true, log }));
  // Shards held whole since the last sync, when the disk still agrees; and those this sync will hold.
  const whole = local.wholeShards(log);
  const holding = VerifiedShards.empty();
  let unchanged = 0;
  /** An object's bytes: the mirror's, else the source's (checked against its sha256), kept. */
  const object = async (sha: string, size: number | undefined, path: string) => {
    const mine = local.verified(sha, size);
    if (mine) return mine;
    const body = await source.object(sha, path);
    await local.put(sha, body);
    return body;
  };
  const packed = new PackedObjects(scratch);
  const range = opts.packs === false ? undefined : source.range;
  const read = { packs: new Set<string>(), ranges: 0 };
  /** Reads `ranges` and writes what they hold; answers the objects left to be read on their own. */
  const fetchPlanned = async (ranges: PackRange[], progress?: Progress): Promise<Map<string, number>> => {
    const got = await fetchRanges(ranges, {
      read: range!,
      put: async (sha, body) => {
        await local.put(sha, body);
        progress?.tick();
      },
      refused: log,
    });
    for (const r of ranges) read.packs.add(r.pack);
    read.ranges += got.ranges;
    return got.refused;
  };
  /** Reads what it can of `wanted` (sha256 → size; a release's shard objects) from the packs. */
  const fromPacks = async (wanted: Map<string, number>): Promise<void> => {
    if (!range || wanted.size === 0) return;
    await fetchPlanned((await packed.plan(wanted)).ranges);
  };
  for (const r of wanted) {
    const where = `${source.description} (release ${r.release}) `;
    const indexBody = await object(r.manifest_sha256, undefined, treePaths.manifest);
    const index = parseManifestIndexAt(indexBody, `${where}${treePaths.manifest}`);
    if (index.packs && range) {
      await packed
        .add(
          index.packs,
          (sha, size, what) => object(sha, size, what),
          (sha, size) => local.held(sha, size),
        )
        .catch((err: Error) => {
          throw err instanceof BadInputError || err instanceof StorageError || err instanceof OriginError
            ? err
            : new BadInputError(`${where}${err.message}; ${DAMAGED}`);
        });
      await fromPacks(
        new Map(
          index.shards
            .filter((s) => !whole.holds(s.sha256) && !local.held(s.sha256, s.size))
            .map((s) => [s.sha256, s.size]),
        ),
      );
      // Then the bases the heads name (manifest shards are delta chains), through the packs too.
      await fromPacks(missingBases(index, local, where, whole));
    }
    scratch.addWanted(r.manifest_sha256, indexBody.length, treePaths.manifest);
    await forEachShard(
      index,
      where,
      (path, listed) => object(listed!.sha256, listed!.size, path),
      whole,
      (head, shard) => {
        if (!shard) {
          unchanged++;
          holding.add(head.sha256, whole.basesOf(head.sha256)!);
          return;
        }
        holding.add(head.sha256, basesDigest(shard.shard.bases));
        for (const { entry } of shard.objects) scratch.addWanted(entry.sha256, entry.size, entry.path);
        for (const e of shard.shard.entries) scratch.addWanted(e.sha256, e.size, e.path);
      },
    );
  }
  for (const [sha, size] of packed.metadata) scratch.addWanted(sha, size, 'a pack index');

  // 3. What the mirror has (checked, in sha256 order), and the rest, downloaded and checked: first
  // what the packs hold, in pack order, then the rest one by one.
  const needed = scratch.wantedCount();
  const checking = bar(opts, 'checking', needed);
  try {
    for (const page of scratch.wanted()) {
      for (const o of page) {
        if (!local.held(o.sha256, o.size)) scratch.addMissing(o, range ? await packed.where(o.sha256, o.size) : null);
        checking.tick();
      }
      await new Promise(setImmediate); // let the progress bar draw
    }
  } finally {
    checking.stop();
  }
  const missing = scratch.missingCounts();
  const fetching = bar(opts, 'mirroring', missing.packed + missing.alone, waits);
  try {
    if (missing.packed > 0) {
      /** The objects of the ranges planned and not yet read: what a refused one is read alone by. */
      const planned = new Map<string, Wanted>();
      let ranges: PackRange[] = [];
      const planner = new RangePlanner((r) => ranges.push(r));
      const send = async () => {
        const batch = ranges;
        ranges = [];
        const refused = await fetchPlanned(batch, fetching);
        for (const sha of refused.keys()) scratch.addAlone(planned.get(sha)!);
        for (const r of batch) for (const o of r.objects) planned.delete(o.sha256);
      };
      for (const page of scratch.missingPacked()) {
        for (const o of page) {
          planner.add(scratch.packs[o.pack], o);
          planned.set(o.sha256, o);
        }
        if (planned.size >= FETCH_BATCH) await send();
      }
      planner.end();
      await send();
    }
    for (const page of scratch.alone()) {
      await forEachLimited(page, concurrency, async (o) => {
        const body = await source.object(o.sha256, o.path);
        if (body.length !== o.size)
          throw new BadInputError(
            `${o.path}: downloaded ${body.length} bytes with the right sha256 but the manifest lists ${o.size}; ${DAMAGED}`,
          );
        await local.put(o.sha256, body);
        fetching.tick();
      });
    }
  } finally {
    fetching.stop();
  }

  // 4. The mirror's history (releases it no longer holds retired), then its pointer (a server of the
  // mirror follows the pointer), then the record.
  const syncedAt = new Date().toISOString();
  await store.updateHistory((h) => retire(h, wanted, syncedAt));
  await store.updatePointer(() => current);
  const record: MirrorRecord = {
    source: opts.from,
    synced_at: syncedAt,
    current: current.release,
    releases: wanted.map((r) => r.release),
  };
  await backend.write(MIRROR_RECORD, Buffer.from(`${JSON.stringify(record, null, 2)}\n`), {
    contentType: 'application/json',
    cacheControl: 'no-cache',
  });

  // 5. Objects no held release lists, once their grace period ended: gc over the mirror's store, when
  // it may find any (clean-up-due.ts).
  let removed = 0;
  const swept = cleanUpState.due(await store.history(), graceHours, (opts.now ?? (() => new Date()))());
  if (swept) {
    const collected = await cleanUp(store, { graceHours, force: opts.force, now: opts.now, log });
    removed = collected?.deleted ?? 0;
    if (collected && collected.young === 0 && collected.packs.young === 0) cleanUpState.done();
  } else cleanUpState.done();
  objects.finished = { shards: holding, swept: removed > 0 };
  // Scratch files of a killed run (this run leaves none): a mirror's objects have one writer at a time.
  await backend.removeScratch('objects', 0);
  // Fetched: downloaded by this run (manifests included); reused: the rest of what the releases list.
  const summary: MirrorSummary = {
    release: current.release,
    releases: record.releases,
    fetched: local.written,
    reused: needed - local.written,
    hashed: local.hashed,
    trusted: local.trusted,
    unchanged,
    removed,
    swept,
    bytes: counters.bytes,
    requests: counters.requests,
    waited: counters.waited,
    packs: read.packs.size,
    ranges: read.ranges,
    waitedSeconds: waits.seconds,
    seconds: (performance.now() - started) / 1000,
  };
  log(mirrorSummaryLine(summary, opts.from, to));
  return summary;
}

/** The bases of the release's shard heads (held already) that the mirror lacks and will read,
 * sha256 → size: down to the first base `whole` holds. What is wrong with a head is left for
 * forEachShard to say. */
function missingBases(
  index: ManifestIndex,
  local: LocalObjects,
  where: string,
  whole: VerifiedShards,
): Map<string, number> {
  const bases = new Map<string, number>();
  index.shards.forEach((s, i) => {
    if (whole.holds(s.sha256)) return;
    const body = local.verified(s.sha256, s.size);
    if (!body) return;
    try {
      const chain = parseShardObject(body, i, index.shards.length, `${where}${s.path}`).bases;
      for (const [k, b] of chain.entries()) {
        if (whole.knows(b, chain.slice(k + 1))) break;
        if (!local.held(b.sha256, b.size)) bases.set(b.sha256, b.size);
      }
    } catch {}
  });
  return bases;
}

/** Reads and checks each shard of a release's manifest (its head, then its chain of bases down to
 * the first `whole` holds), a few at once, and hands each to `take`; a shard whose head `whole` holds
 * is not read (`take` gets null). What is wrong with a shard is the source's fault (exit 3). */
async function forEachShard(
  index: ManifestIndex,
  where: string,
  read: ManifestRead,
  whole: VerifiedShards,
  take: (head: ManifestIndex['shards'][number], shard: Awaited<ReturnType<typeof loadShard>> | null) => void,
): Promise<void> {
  await forEachLimited([...index.shards.keys()], SHARDS_IN_FLIGHT, async (i) => {
    const head = index.shards[i];
    if (whole.holds(head.sha256)) return take(head, null);
    try {
      take(head, await loadShard(read, index, i, where, (b, rest) => whole.knows(b, rest)));
    } catch (err) {
      throw err instanceof ManifestProblem ? new BadInputError(`${err.message}; ${DAMAGED}`) : err;
    }
  });
}

/** Refuses a directory that is neither empty, nor missing, nor a mirror: nothing here deletes what
 * it did not make. */
function checkMirrorDir(to: string): void {
  if (!existsSync(to)) return;
  if (!statSync(to).isDirectory()) throw new UsageError(`--to ${to} exists and is not a directory`);
  if (existsSync(join(to, treePaths.manifest))) {
    throw new UsageError(
      `--to ${to} holds a rendered tree (a mirror made by an older isoatlas, or a build): mirror into a new directory, then remove it yourself`,
    );
  }
  const entries = readdirSync(to).filter((name) => !name.startsWith('.'));
  const ours = new Set([
    POINTER_KEY,
    HISTORY_KEY,
    MIRROR_RECORD,
    PROBE_KEY,
    VERIFIED_INDEX,
    VERIFIED_SHARDS,
    REFUSED_RECORD,
    'objects',
  ]);
  if (entries.some((name) => !ours.has(name) && !/\.tmp(-[0-9]+-[0-9a-f]+)?$|\.lock$/.test(name))) {
    throw new UsageError(
      `--to ${to} is not empty and is not a mirror (it holds ${entries
        .filter((n) => !ours.has(n))
        .slice(0, 3)
        .join(', ')}): refusing to write into it`,
    );
  }
}

/** The history with `wanted` the held releases, and those it held before and holds no more
 * retired now: gc keeps their objects for the grace period (sweep.ts). */
function retire(h: ReleaseHistory, wanted: PublishedRelease[], at: string): ReleaseHistory {
  const holds = (r: { release: string }) => wanted.some((w) => w.release === r.release);
  const dropped = h.releases.filter((r) => !holds(r));
  return {
    ...h,
    format: STORE_FORMAT,
    releases: wanted,
    retired: [
      ...h.retired.filter((r) => !holds(r) && !dropped.some((d) => d.release === r.release)),
      ...dropped.map((r) => ({ ...r, retired_at: at })),
    ],
  };
}

/** Deletes what gc would (build/publish/sweep.ts): the sync is done, so a clean-up that cannot finish
 * (a retired release's manifest gone by hand, say) is said and leaves the objects for the next sync. */
async function cleanUp(
  store: ReleaseStore,
  o: { graceHours: number; force?: boolean; now?: () => Date; log: (line: string) => void },
): Promise<CollectSummary | null> {
  try {
    // One machine's clock dates the retirements and the files: no skew between them to allow for.
    return await sweepStore(store, {
      graceHours: o.graceHours,
      force: o.force,
      now: o.now,
      log: o.log,
      clockSkewMs: 0,
    });
  } catch (err) {
    o.log(
      `the mirror is synced, but deleting the objects it no longer holds failed: ${(err as Error).message}. The next sync tries again`,
    );
    return null;
  }
}

/** The mirror's objects, and what it knows of them: an object is trusted without reading it when
 * the verified index recorded it with the stat its file has now (verified-index.ts), else hashed. */
class LocalObjects {
  /** Objects written by this run. */
  written = 0;
  /** Held objects checked by hashing their bytes, and trusted from the index by a stat. */
  hashed = 0;
  trusted = 0;
  private readonly index: VerifiedIndex;
  /** Objects `isoatlas serve` refused since the last sync: hashed whatever the index says. */
  private readonly refused: Set<string>;
  private readonly verify: boolean;
  constructor(
    private readonly store: ReleaseStore,
    private readonly backend: DirectoryBackend,
    o: { verify: boolean; log: (line: string) => void },
  ) {
    this.verify = o.verify;
    this.index = o.verify ? VerifiedIndex.empty(backend.root) : VerifiedIndex.read(backend.root, o.log);
    this.refused = readRefused(backend.root);
    if (this.refused.size > 0)
      o.log(
        `${this.refused.size} object${this.refused.size === 1 ? '' : 's'} refused by \`isoatlas serve\` since the last sync: hashed again, fetched again if corrupt`,
      );
  }

  private file(sha: string): string {
    return join(this.backend.root, objectKey(sha));
  }

  /** The shards the last sync held whole (verified-shards.ts), when the disk still agrees: every object
   * the index records is there unchanged, `isoatlas serve` refused none, and no `--verify`. Otherwise
   * none, and the record is removed until a sync finishes again: what it says may no longer be so. */
  wholeShards(log: (line: string) => void): VerifiedShards {
    const root = this.backend.root;
    if (this.verify || !this.index.loaded || this.refused.size > 0) {
      VerifiedShards.remove(root);
      return VerifiedShards.empty();
    }
    const record = VerifiedShards.read(root, log);
    if (record.size === 0) return record;
    const { trusted, changed } = this.index.confirmAll((sha) => stampOf(this.file(sha)));
    this.trusted += trusted;
    if (changed === null) return record;
    VerifiedShards.remove(root);
    log(
      `object ${objectKey(changed)} is missing or changed on disk since the last sync: every manifest shard is read again, and what it lists checked`,
    );
    return VerifiedShards.empty();
  }

  /** Whether the object is there with this sha256 (and size): by the index when its file is
   * unchanged since it was verified, else by hashing it. */
  held(sha: string, size?: number): boolean {
    return this.check(sha, size, false) !== null;
  }

  /** The object's bytes when it is there with this sha256 (and size), else null. */
  verified(sha: string, size?: number): Buffer | null {
    const body = this.check(sha, size, true);
    return body === true ? null : body;
  }

  /** Null when the object is missing or wrong; its bytes when asked for (or hashed), else true. */
  private check(sha: string, size: number | undefined, bytes: boolean): Buffer | true | null {
    const stamp = stampOf(this.file(sha));
    if (!stamp || (size !== undefined && stamp.size !== size)) return null;
    const trusted = this.refused.has(sha) ? null : this.index.trusts(sha, stamp);
    if (trusted) {
      if (trusted === 'first') this.trusted++;
      if (!bytes) return true;
      // The stat vouches for these bytes: read, not hashed.
      return this.backend.readNow(objectKey(sha), size);
    }
    const body = this.backend.readNow(objectKey(sha), size);
    if (!body) return null;
    this.hashed++;
    if (sha256Of(body) !== sha) return null;
    // The stamp taken before the read: a change during the read shows at the next stat.
    this.index.add(sha, stamp);
    this.refused.delete(sha);
    return body;
  }

  async put(sha: string, body: Buffer): Promise<void> {
    await this.store.putObject(sha, body);
    this.written++;
    this.refused.delete(sha);
    // Checked against its sha256 as it was downloaded.
    const stamp = stampOf(this.file(sha));
    if (stamp) this.index.add(sha, stamp);
  }

  /** Writes the index of what the mirror holds verified, takes the record of refused objects and,
   * once a sync `finished`, writes the record of the shards it holds whole. Never fails the sync:
   * without an index the next one hashes everything, without the record it reads every shard. */
  save(log: (line: string) => void, finished?: Finished): void {
    // Before the index is written: writing lets go of what it read.
    try {
      takeRefused(this.backend.root, (sha) => this.index.verifiedNow(sha) || stampOf(this.file(sha)) === null);
    } catch (err) {
      log(`cannot update ${join(this.backend.root, REFUSED_RECORD)}: ${(err as Error).message}`);
    }
    try {
      // After a clean-up that deleted objects, every record is compared with its file again.
      this.index.write(this.backend.root, (sha) => stampOf(this.file(sha)), { restat: finished?.swept });
    } catch (err) {
      this.index.close();
      VerifiedShards.remove(this.backend.root);
      log(
        `cannot write ${join(this.backend.root, VERIFIED_INDEX)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the next sync hashes every object again`,
      );
      return;
    }
    if (!finished) return;
    try {
      // Only now: the objects of these shards are all in the index just written.
      finished.shards.write(this.backend.root);
    } catch (err) {
      VerifiedShards.remove(this.backend.root);
      log(
        `cannot write ${join(this.backend.root, VERIFIED_SHARDS)} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the next sync reads every manifest shard again`,
      );
    }
  }
}

/** Reads raw files of the source (S3 or HTTP), waiting when it is busy and retrying once otherwise. */
async function rawReader(
  opts: MirrorOptions,
  counters: { bytes: number; waited: number; requests: number },
  waits: Waits,
): Promise<{
  description: string;
  /** The file, or with `range` bytes start..end of it; null when the source has no such file. */
  read(path: string, range?: { start: number; end: number }): Promise<Buffer | null>;
  /** Whether the source reads ranges. */
  ranges: boolean;
}> {
  const parsed = parseMirrorSource(opts.from);
  // Trimmed: a key pasted or read from a file may carry whitespace, which the gate refuses.
  const apiKey = (opts.apiKey ?? process.env.ISOATLAS_API_KEY)?.trim();
  const raw: Origin =
    parsed.kind === 's3'
      ? await s3Origin(parsed, opts)
      : new HttpOrigin(
          parsed.base,
          opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
          apiKey ? { Authorization: `Bearer ${apiKey}` } : {},
        );
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((ok) => setTimeout(ok, ms)));
  return {
    description: raw.description,
    ranges: raw.readRange !== undefined,
    async read(path, range) {
      let failures = 0;
      for (let busy = 0; ; ) {
        try {
          counters.requests++;
          const object = range ? await raw.readRange!(path, range.start, range.end) : await raw.read(path);
          if (!object) return null;
          counters.bytes += object.body.length;
          return Buffer.from(object.body.buffer, object.body.byteOffset, object.body.byteLength);
        } catch (err) {
          if (err instanceof OriginError && err.kind === 'overloaded' && ++busy < BUSY_ATTEMPTS) {
            counters.waited++;
            const ms = Math.min(
              MAX_WAIT_MS,
              err.retryAfterSeconds !== undefined ? err.retryAfterSeconds * 1000 : 1000 * 2 ** busy,
            );
            waits.begin(ms, refusal(err, ms));
            try {
              await sleep(ms);
            } finally {
              waits.end();
            }
            continue;
          }
          if (++failures >= ATTEMPTS) throw withAdvice(err as Error, opts);
        }
      }
    },
  };
}

/** Why the sync waits, in words: "the source limits this address (429, Retry-After 37)". */
function refusal(err: OriginError, ms: number): string {
  const why = err.status === 429 ? 'the source limits this address' : 'the source is busy';
  const code = err.status ?? err.code ?? 'busy';
  const after =
    err.retryAfterSeconds === undefined
      ? 'no Retry-After: waiting longer each time'
      : err.retryAfterSeconds * 1000 > ms
        ? `Retry-After ${err.retryAfterSeconds}, waiting at most ${MAX_WAIT_MS / 1000} s at a time`
        : `Retry-After ${err.retryAfterSeconds}`;
  return `${why} (${code}, ${after})`;
}

/** The source's refusals: counted, each wait said as it begins (after the bar being drawn, else as
 * a log line; once for requests refused together), and the time spent waiting. */
class Waits {
  /** Until when (performance.now()) the waits said so far last. */
  private until = 0;
  private waitedMs = 0;
  private waiting = 0;
  /** The bar being drawn: it shows the wait instead of a log line that would break it. */
  bar: Progress | null = null;
  constructor(private readonly log: (line: string) => void) {}

  begin(ms: number, why: string): void {
    const now = performance.now();
    const end = now + ms;
    this.waiting++;
    if (end <= this.until) return;
    this.waitedMs += end - Math.max(now, this.until);
    const told = now < this.until;
    this.until = end;
    if (told) return;
    const line = `waiting ${Math.ceil(ms / 1000)} s: ${why}`;
    if (this.bar?.note) this.bar.note(line);
    else this.log(line);
  }

  end(): void {
    if (--this.waiting > 0) return;
    // Every wait is over (sooner than said, when the sleep was shorter): the next one is news.
    this.until = Math.min(this.until, performance.now());
    this.bar?.note?.(null);
  }

  get seconds(): number {
    return this.waitedMs / 1000;
  }
}

function withAdvice(err: Error, opts: MirrorOptions): Error {
  if (/answered 401/.test(err.message))
    return new StorageError(`${err.message}: the source requires an API key; set ISOATLAS_API_KEY`);
  if (err instanceof OriginError) return sourceError(err, opts.from, opts.endpoint);
  return err;
}

async function openSource(reader: Awaited<ReturnType<typeof rawReader>>, _from: string): Promise<Source> {
  const where = reader.description;
  const pointerBody = await reader.read(POINTER_KEY);
  if (pointerBody) {
    const parse = <T>(key: string, body: Buffer, parser: (text: string) => T) => {
      try {
        return parser(body.toString('utf8'));
      } catch (err) {
        throw new BadInputError(`${where}${key}: ${(err as Error).message}; ${DAMAGED}`);
      }
    };
    const pointer = parse(POINTER_KEY, pointerBody, parsePointer);
    const historyBody = await reader.read(HISTORY_KEY);
    const history = historyBody
      ? parse(HISTORY_KEY, historyBody, parseHistory)
      : { format: STORE_FORMAT, releases: [pointer], pending: [], retired: [] };
    return {
      description: where,
      pointer,
      history: history as ReleaseHistory,
      object: (sha, path) =>
        retriedIfWrong(async () => {
          const body = await reader.read(objectKey(sha));
          if (!body)
            throw new BadInputError(
              `${path}: object ${objectKey(sha)} is missing from ${where}, though the release's manifest lists it; ${DAMAGED}`,
            );
          return checked(body, sha, path, 'the manifest');
        }),
      range: reader.ranges ? (key, start, end) => reader.read(key, { start, end }) : undefined,
    };
  }
  // No pointer: a rendered tree on a static host, mirrored as its one release.
  const manifest = await reader.read(treePaths.manifest);
  if (!manifest) {
    throw new BadInputError(
      `${where} has neither ${POINTER_KEY} (a published store) nor ${treePaths.manifest} (a rendered tree): check --from (the base URL of the CDN, a mirror's server, or a tree root); a source that needs a key answers 403 without one (set ISOATLAS_API_KEY)`,
    );
  }
  const index = parseManifestIndexAt(manifest, `${where}${treePaths.manifest}`);
  const release: PublishedRelease = {
    release: String(index.release),
    manifest_sha256: sha256Of(manifest),
    published_at: new Date().toISOString(),
  };
  return {
    description: where,
    pointer: { format: STORE_FORMAT, ...release, previous: null },
    history: { format: STORE_FORMAT, releases: [release], pending: [], retired: [] },
    object: (sha, path) =>
      retriedIfWrong(async () => {
        const body =
          path === treePaths.manifest && sha === release.manifest_sha256 ? manifest : await reader.read(path);
        if (!body) throw new BadInputError(`${path}: not found at ${where}, though the manifest lists it; ${DAMAGED}`);
        return checked(body, sha, path, 'the manifest');
      }),
  };
}

/** manifest.json of a tree source, parsed: garbage is the source's fault (exit 3). */
function parseManifestIndexAt(body: Buffer, where: string) {
  try {
    return parseManifestIndex(body, where);
  } catch (err) {
    throw new BadInputError(`${(err as Error).message}; ${DAMAGED}`);
  }
}

/** The source answers, but not with a whole release: bad input (exit 3), not storage that cannot be reached. */
const DAMAGED =
  'the source does not serve a whole isoatlas release: check --from, tell its operator, or sync from another source. The mirror still serves what it held';

class WrongBytes extends BadInputError {}

function checked(body: Buffer, sha: string, path: string, listedBy: string): Buffer {
  const actual = sha256Of(body);
  if (actual !== sha)
    throw new WrongBytes(
      `${path}: downloaded ${body.length} bytes with sha256 ${actual}, but ${listedBy} lists sha256 ${sha}; ${DAMAGED}`,
    );
  return body;
}

/** A download that came with the wrong bytes (cut off, or changed in transit) is tried once more. */
async function retriedIfWrong(download: () => Promise<Buffer>): Promise<Buffer> {
  try {
    return await download();
  } catch (err) {
    if (!(err instanceof WrongBytes)) throw err;
    return download();
  }
}

async function s3Origin(source: Extract<MirrorSource, { kind: 's3' }>, opts: MirrorOptions): Promise<Origin> {
  // Loaded on demand: the AWS SDK is large and only this source needs it.
  const { S3Client } = await import('@aws-sdk/client-s3');
  const { S3RawOrigin } = await import('../origins/s3.js');
  const client = new S3Client({
    region: opts.region ?? process.env.AWS_REGION ?? 'us-east-1',
    endpoint: opts.endpoint,
    forcePathStyle: Boolean(opts.endpoint),
    // Integrity is checked against the manifest; skip the SDK's newer checksums, which S3-compatible
    // servers do not all understand.
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return new S3RawOrigin(client, source.bucket, source.prefix, opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS);
}

/** Progress (a bar on a terminal, periodic lines otherwise), unless opts.progress is false; the
 * bar shows the source's refusals (`waits`) while it is drawn. */
function bar(opts: MirrorOptions, label: string, total: number, waits?: Waits): Progress {
  if (opts.progress === false) return { tick() {}, stop() {} };
  const progress = startProgress(label, total);
  let drawing = true;
  if (waits) waits.bar = progress;
  return {
    tick: (n) => progress.tick(n),
    stop: () => {
      if (drawing) progress.stop();
      drawing = false;
      if (waits?.bar === progress) waits.bar = null;
    },
  };
}
