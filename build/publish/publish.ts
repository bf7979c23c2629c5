// `isoatlas publish`: a rendered tree → the store in a bucket (edge/contract/store-layout.ts). Every file
// is an object named by its sha256, so publishing uploads only what the store does not have and
// copies nothing. What the store has is known from the kept releases' manifests (a manifest shard
// whose sha256 the new release shares lists the same files, so only changed shards are read), not
// from one request per object; objects a kept release lists are never collected (gc), so they stay.
// Then the release enters the history and the pointer switches to it, each a conditional write, so
// concurrent publishes cannot lose each other's entry.
//
// Order, so that a reader or a garbage collection never sees a release with a missing file:
//   1. the manifest's objects (its shards, the pack list and pack indexes, manifest.json), and the
//      release as `pending` in the history (gc keeps whatever a pending release references, packs
//      included);
//   2. the packs of what this release adds (packing.ts), and every other file the store lacks, in one
//      pass (upload-pass.ts);
//   3. the release moves from pending to the kept releases, and the pointer names it.
// Before step 1 nothing is written (the conditional-write probe aside): the tree is checked whole
// first, in one read that also cuts and hashes the packs (tree-check.ts), so a damaged tree leaves
// the store untouched. That is why no object goes up while the tree is still being hashed.
// Publishing a tree whose name the store records for it (the history's names) but does not keep (an
// interrupted run, a release --keep retired, or one whose pending entry gc dropped) lists the store
// once, and uploads only what neither a kept release lists nor the listing found, packs included.
// What goes into the packs does not depend on that listing (only on the kept releases), so the
// packs come out the same as the first run's; a re-run whose manifest the store still has takes it
// (so its pack list) as it is.
//
// What it knows of the store (which objects are there) is trusted at step 3 only if no gc deleted
// anything since it looked: the history's gc epoch (edge/contract/store-layout.ts GcState) is the same, in
// the conditional write that makes the release kept, as when it first read the history, and no gc
// was deleting then. Otherwise it waits for that gc, lists the store, uploads what is missing and
// tries again. The pointer then moves only to the newest kept release, in a write conditional on the
// pointer it read before reading the history: a publish that a newer one overtook (or retired with
// --keep) loses, says so and leaves current.json alone. A release name, once used, always means the
// same data (the history's names record, which outlives gc, holds the sha256 of the tree's own
// manifest.json for each name).
//
// The manifest publish writes is not the tree's: its shards are encoded against the current release's
// (manifest-encoding.ts), so a small change writes a small part of the manifest. Publishing a tree
// whose release name the store already holds with the same data (a re-run of an interrupted publish,
// or the same release published again) lists the manifest published for it then, when the store
// still has it, so a release keeps its manifest sha256.
//
// A store whose deployment pins releases in the CDN's KeyValueStore (edge-pin.ts) is published only
// with it: it is found in the store when --kvs is not given, and reached before anything is uploaded.
//
// Publish holds no whole release: the manifests are read a shard at a time (published-manifest.ts)
// and what spans the release (its objects, what the store holds, the packs) is counted in a scratch
// SQLite ledger (publish-ledger.ts), read back in pages in a fixed order, so the packs and the
// manifest are what they were when this was counted in memory.
import { CloudFrontClient, CreateInvalidationCommand } from '@aws-sdk/client-cloudfront';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  HISTORY_KEY,
  POINTER_KEY,
  RELEASE_NAME,
  usedNames,
  type PublishedRelease,
  type ReleaseHistory,
} from '../../edge/contract/store-layout.js';
import { treePaths } from '../../edge/contract/tree.js';
import { startProgress } from '../common/progress.js';
import { BadInputError, UsageError } from '../common/errors.js';
import { manifestBody } from './manifest-encoding.js';
import { openStore, type StoreLocation } from './s3-client.js';
import type { ReleaseStore } from '../../edge/store/release-store.js';
import { movePin, readPin, recordPin, resolvePin, type KvsAccess } from './edge-pin.js';
import { StorageError } from '../common/storage-errors.js';
import { checkTree, readChecked, startSizeCheck } from './tree-check.js';
import { earlierPacks, PackCutter, packListBody, readPacks } from './packing.js';
import { PublishLedger } from './publish-ledger.js';
import { prefetchReads, publishedManifest, readTree } from './published-manifest.js';
import { PhaseClock, type PhaseTimes } from './phases.js';
import { s3Uploads, storeUploads, type Uploads } from './s3-uploads.js';
import { UploadPass, type ReleaseObject, type UploadCounts } from './upload-pass.js';
import { S3Backend } from '../../edge/store/s3-backend.js';

export { s3Client } from './s3-client.js';
export { OBJECT_CACHE_CONTROL } from '../../edge/store/release-store.js';

/** The store is a bucket (s3, bucket, prefix) or given whole (`store`: any backend). */
export interface PublishOptions extends StoreLocation {
  dir: string;
  /** Keep the newest `keep` releases in the history and retire older ones (gc collects them later). */
  keep?: number;
  concurrency?: number;
  distributionId?: string;
  cloudfront?: Pick<CloudFrontClient, 'send'>;
  /** The CDN's KeyValueStore: its viewer gate pins API requests to the release named there. Its ARN
   * may be left out when the store records it (edge.json); a store that records one needs this. */
  kvs?: KvsAccess;
  progress?: boolean;
  log?: (line: string) => void;
  /** Skip the check that the server honours conditional writes (`--unsafe-single-writer`): only
   * safe when no other publish, rollback or gc runs on the store meanwhile. */
  unsafeSingleWriter?: boolean;
  /** How long to wait for a gc that is deleting objects of the store before giving up. */
  gcWaitMs?: number;
  /** Where a pack is closed; PACK_TARGET_BYTES unless a test cuts small packs. */
  packTargetBytes?: number;
  /** Where the phases' times go (`--log-level debug`): phases.ts. */
  debug?: (line: string) => void;
}

export interface PublishSummary {
  release: string;
  previous: string | null;
  /** Distinct objects the release consists of (files with the same bytes are one object). */
  objects: number;
  uploaded: number;
  /** Objects the store already had (from other releases, or an interrupted run of this one). */
  present: number;
  bytesUploaded: number;
  /** Bytes of the manifest's objects (manifest.json and shard objects) this publish uploaded. */
  manifestBytesUploaded: number;
  /** Packs uploaded (packing.ts), and their bytes (not counted in bytesUploaded). */
  packs: number;
  packBytes: number;
  seconds: number;
  retired: string[];
  invalidated: string[];
  /** Where the time went (phases.ts). */
  phases: PhaseTimes;
}

/** Bare signed PUTs for a bucket (s3-uploads.ts), the store's own writes otherwise. */
async function uploadsTo(store: ReleaseStore): Promise<Uploads> {
  const b = store.backend;
  return (b instanceof S3Backend ? await s3Uploads(b.s3, b.bucket, b.prefix) : null) ?? storeUploads(store);
}

const sha256Of = (body: Buffer) => createHash('sha256').update(body).digest('hex');

export async function publish(opts: PublishOptions): Promise<PublishSummary> {
  const started = performance.now();
  if (opts.keep !== undefined && (!Number.isInteger(opts.keep) || opts.keep < 1))
    throw new UsageError('--keep must be a whole number ≥ 1');
  if (!existsSync(join(opts.dir, treePaths.manifest))) {
    throw new BadInputError(
      `${opts.dir} is not a rendered isoatlas tree (no ${treePaths.manifest}); build one with \`isoatlas build\`, or check --dir`,
    );
  }
  // What publish counts (the tree's files, the store's objects, the packs) is kept on disk, in a
  // scratch file removed however publish ends (publish-ledger.ts).
  const ledger = new PublishLedger();
  try {
    return await publishTree(opts, ledger, started);
  } finally {
    ledger.close();
  }
}

async function publishTree(opts: PublishOptions, ledger: PublishLedger, started: number): Promise<PublishSummary> {
  const log = opts.log ?? (() => {});
  const clock = new PhaseClock(started, opts.debug ?? (() => {}));
  const concurrency = opts.concurrency ?? 16;
  const store = openStore(opts);
  // The store's first reads go out now and arrive while the tree's manifest is read.
  const early = prefetchReads(store);
  // Every file the manifest lists must be there with its size: checked from now on, beside the
  // reading of the tree and the store (tree-check.ts), and awaited before anything is written.
  const sizes = startSizeCheck(opts.dir);
  try {
    const tree = await clock.time('tree', () =>
      readTree(
        opts.dir,
        ledger,
        'build the tree again (`isoatlas build --force`) and publish that; nothing was written to the store',
        (files) => sizes.add(files),
      ),
    );
    sizes.end();
    const release = tree.index.release;
    if (!RELEASE_NAME.test(release))
      throw new UsageError(
        `release name ${JSON.stringify(release)} cannot be published: names are letters, digits, '.', '_' and '-' (it becomes a URL segment)`,
      );
    // What the name stands for: the tree's own manifest.json (the published one depends on the store).
    const treeSha = sha256Of(tree.indexBody);
    ledger.keepBody(treeSha, tree.indexBody);
    /** A manifest object's bytes: the ledger's (the store's, the encoding's), or the tree's own, read
     * from the tree and checked again. */
    const manifestObject = (sha: string): Buffer | null => {
      const held = ledger.body(sha);
      if (held) return held;
      const path = ledger.treeObjectPath(sha);
      return path ? readChecked(opts.dir, { path, sha256: sha }, store.where) : null;
    };
    const nameTaken = (h: ReleaseHistory) => {
      const used = usedNames(h).get(release);
      if (used !== undefined && used !== treeSha) throw nameUsed(store, release, used);
    };
    /** Which packs the store holds, into the ledger: one listing. */
    const listPacks = () =>
      store.eachPackSlice(
        (slice) =>
          ledger.listedInStore(
            'pack',
            slice.map((o) => o.sha),
          ),
        concurrency,
      );

    // The store as this publish finds it: what it holds for sure is in the ledger after this.
    const { history, published, pin, listed } = await clock.time('history', async () => {
      // Read before anything this publish learns about the store's objects counts: see the gc epoch
      // above (what the early reads found is used only as this history allows).
      const history = await early.history;
      nameTaken(history);
      // The manifest as this store gets it (manifest-encoding.ts): the same tree again takes the
      // manifest the store has for it, pack list included; a new one is encoded against the current
      // release.
      const published = await publishedManifest(early.reads, history, tree, treeSha, ledger, concurrency, log);
      // The release's distinct objects: the manifest's shard objects first (heads and bases), then
      // every other file.
      ledger.fixObjects();
      // Before any write: a deployment whose pin this publish could not move is left untouched.
      const pin = await resolvePin(store, opts.kvs, 'publish');
      // An earlier publish of this same tree that is not kept (interrupted, retired, or its pending
      // entry dropped by gc) may have left objects and packs no kept release lists: one listing of each
      // finds them.
      const listed =
        usedNames(history).get(release) === treeSha && !history.releases.some((r) => r.release === release);
      if (listed) {
        await store.eachObjectSlice(
          (slice) =>
            ledger.listedInStore(
              'object',
              slice.filter((o) => o.size >= 0).map((o) => o.sha),
            ),
          concurrency,
        );
        await listPacks();
      }
      return { history, published, pin, listed };
    });
    const { reused } = published;
    // What goes into packs and is hashed: what no kept release lists. What goes up: that, less what the
    // listing found.
    ledger.markMissing();
    ledger.markPending();

    // The packs (packing.ts): a new release packs what it adds, cut and hashed as the tree is checked;
    // the same tree again takes the pack list its manifest names, and builds again only the packs of
    // its own objects the store lacks.
    let packList: Buffer | null = null;
    let publishedIndex = published.indexBody;
    if (reused) {
      packList = await clock.time('history', async () => {
        const list = await readPacks(store, published.index, `release ${release}'s ${treePaths.manifest}`, (p) =>
          ledger.addPack(p, false),
        );
        if (list) ledger.know([sha256Of(list)]);
        ledger.knowPackIndexes();
        return list;
      });
      if (listed) ledger.buildUnlisted();
    }
    // Before anything is written: a tree changed since its build is refused whole (tree-check.ts).
    const cutter = reused ? null : new PackCutter((p) => ledger.addPack(p, !listed, true), opts.packTargetBytes);
    const checked = await clock.time('hash', () =>
      checkTree({
        dir: opts.dir,
        sizes,
        upload: ledger.toCheck(reused),
        held: manifestObject,
        each: cutter ? (o, body) => cutter.add(o, body) : undefined,
        where: store.where,
        progress: opts.progress,
      }),
    );
    if (cutter) {
      cutter.end();
      // A listing found some packs: those are not built again.
      if (listed) ledger.buildUnlisted();
      await clock.time('history', () => earlierPacks(early.reads, history.releases, ledger.earlierPacksSink(), log));
      packList = packListBody(ledger.packRefs());
      // Named in manifest.json, so the release's manifest sha256 covers its packs too.
      publishedIndex = manifestBody({
        ...published.index,
        packs: { sha256: sha256Of(packList), size: packList.length },
      });
    }
    const manifestSha = sha256Of(publishedIndex);
    // What publish writes that is not a file of the tree: manifest.json with its packs, the pack list
    // and the pack indexes (recorded with their packs).
    if (packList) ledger.generate(packList, sha256Of(packList), 'pack list');
    ledger.generate(publishedIndex, manifestSha, treePaths.manifest);
    const total = ledger.totalObjects();

    const counts: UploadCounts = { uploaded: 0, bytesUploaded: 0, manifestBytesUploaded: 0, packs: 0, packBytes: 0 };
    const summary = { release, previous: null as string | null, retired: [] as string[] };
    // The first writes: a server without conditional writes is refused before any (its probe object
    // aside), and the store records its KeyValueStore.
    const uploads = await clock.time('probe', async () => {
      if (!opts.unsafeSingleWriter) await store.checkConditionalWrites('publish');
      if (pin) await recordPin(store, pin, opts.kvs?.replaces, log);
      return uploadsTo(store);
    });

    // Before the first upload: gc keeps every object younger than a pending release's start.
    const startedAt = new Date().toISOString();
    const bar =
      opts.progress === false
        ? { tick() {}, stop() {} }
        : startProgress('publishing', ledger.pendingCount() + ledger.packsToBuild().length);
    const pass = new UploadPass({
      ledger,
      uploads,
      body: (o) => (o.kind === 'file' ? checked.body(o) : Promise.resolve(manifestObject(o.sha256)!)),
      clock,
      concurrency,
      counts,
      manifestSha,
      tick: () => bar.tick(),
    });
    try {
      // 1. The manifest (its shard objects, then manifest.json with its pack list and pack indexes),
      //    then the release as pending (its name recorded for good).
      await clock.time('manifest', async () => {
        await pass.each(ledger.pendingObjects('shard'), false);
        ledger.uploaded('shard');
        await pass.each(ledger.generatedToUpload(), false);
        await store.updateHistory((h) => {
          nameTaken(h);
          const kept = protects(h, release, manifestSha);
          if (kept && h.names?.[release] === treeSha) return null;
          const pending = kept
            ? h.pending
            : [...h.pending, { release, manifest_sha256: manifestSha, started_at: startedAt }];
          return { ...h, pending, names: { ...Object.fromEntries(usedNames(h)), [release]: treeSha } };
        });
      });
      // 2. The packs, and every other file the store lacks, in one pass.
      await pass.all();
      clock.endUploads();
    } finally {
      bar.stop();
    }

    // 3. Kept, then current.
    await clock.time('pointer', async () => {
      const entry: PublishedRelease = { release, manifest_sha256: manifestSha, published_at: new Date().toISOString() };
      let seen = history;
      for (let check = 1; ; check++) {
        let trusted = false;
        await store.updateHistory((h): ReleaseHistory | null => {
          trusted = protects(h, release, manifestSha) && !gcDeletedSince(seen, h);
          return trusted ? keepRelease(h, entry, opts.keep, summary) : null;
        });
        if (trusted) break;
        if (check === 3)
          throw new StorageError(
            `gc kept deleting objects of ${store.where} while this publish checked them; publish again when gc has finished (it uploads only what is missing)`,
          );
        seen = await recheck(store, release, manifestSha, ledger, (pages) => pass.each(pages, false), {
          concurrency,
          log,
          waitMs: opts.gcWaitMs ?? GC_WAIT_MS,
        });
        // The packs built from the release's own objects that the store lacks now.
        await listPacks();
        ledger.buildUnlisted();
        await pass.packs();
      }
      await store.updatePointer(async (current) => {
        const h = await store.history();
        const newest = h.releases.at(-1);
        if (newest?.release !== release || newest.manifest_sha256 !== manifestSha)
          throw overtaken(store, release, current?.release ?? null, h);
        summary.previous = current && current.release !== release ? current.release : (current?.previous ?? null);
        return { format: 2, ...newest, previous: summary.previous };
      });
      log(`${store.where}${POINTER_KEY} → ${release}`);
      if (pin) await movePin(store, pin, release, pinBehind(store, release, 'publish the same tree again'), log);
    });

    const invalidated = opts.distributionId
      ? await invalidate(opts.cloudfront ?? new CloudFrontClient({}), opts.distributionId)
      : [];
    return {
      ...summary,
      objects: total,
      ...counts,
      present: Math.max(0, total - counts.uploaded),
      seconds: (performance.now() - started) / 1000,
      invalidated,
      phases: clock.times,
    };
  } finally {
    sizes.stop();
  }
}

/** A release name means one tree for good (the history's names record its tree's manifest sha256). */
const nameUsed = (store: ReleaseStore, release: string, used: string) =>
  new UsageError(
    `release ${release} is already in ${store.where} with other content (manifest ${used.slice(0, 12)}…), or was until gc collected it; ` +
      'a release name always means the same data: build the new data under a new release name',
  );

/** How long a publish waits for a gc that is deleting objects to finish. */
const GC_WAIT_MS = 10 * 60_000;

/** The history's kept releases with this one the newest, pending no more, those beyond `keep` retired. */
function keepRelease(
  h: ReleaseHistory,
  entry: PublishedRelease,
  keep: number | undefined,
  summary: { retired: string[] },
): ReleaseHistory {
  const { release } = entry;
  // A release kept already keeps its entry (its first publication), if it is this same manifest.
  const releases = [
    ...h.releases.filter((r) => r.release !== release),
    h.releases.find((r) => r.release === release && r.manifest_sha256 === entry.manifest_sha256) ?? entry,
  ];
  const kept = keep === undefined ? releases : releases.slice(-keep);
  const dropped = releases.filter((r) => !kept.includes(r));
  summary.retired = dropped.map((r) => r.release);
  return {
    ...h,
    releases: kept,
    pending: h.pending.filter((r) => r.release !== release),
    retired: [
      ...h.retired.filter((r) => !kept.some((k) => k.release === r.release)),
      ...dropped.map((r) => ({ ...r, retired_at: entry.published_at })),
    ],
  };
}

/** Whether gc protects the release in this history: kept or pending, with this manifest. */
const protects = (h: ReleaseHistory, release: string, manifestSha: string) =>
  [...h.releases, ...h.pending].some((r) => r.release === release && r.manifest_sha256 === manifestSha);

/** Whether a gc may have deleted objects between reading `before` and `after`: it was deleting then,
 * or has started (or stopped) deleting since, which bumps the epoch. */
const gcDeletedSince = (before: ReleaseHistory, after: ReleaseHistory) =>
  Boolean(before.gc?.deleting_since) || (before.gc?.epoch ?? 0) !== (after.gc?.epoch ?? 0);

/** After a gc ran during the publish: waits until no gc is deleting, enters the release as pending
 * again if gc dropped it, then lists the store and uploads what it lacks. Returns the history read
 * before the listing, against which the next check compares. */
async function recheck(
  store: ReleaseStore,
  release: string,
  manifestSha: string,
  ledger: PublishLedger,
  uploadEach: (pages: Iterable<readonly ReleaseObject[]>) => Promise<void>,
  o: { concurrency: number; log: (line: string) => void; waitMs: number },
): Promise<ReleaseHistory> {
  const deadline = Date.now() + o.waitMs;
  let h = await store.history();
  while (h.gc?.deleting_since) {
    if (Date.now() > deadline) {
      throw new StorageError(
        `${store.where}${HISTORY_KEY} says a gc has been deleting objects since ${h.gc.deleting_since}, so this publish cannot tell which of its objects are still there; ` +
          `it left current.json alone. If that gc is still running, publish again when it has finished; if it was killed, run \`isoatlas gc\` once (it clears the mark), then publish again`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    h = await store.history();
  }
  o.log(
    `gc ran on ${store.where} while release ${release} was being published: checking that each of its objects is still in the store`,
  );
  if (!protects(h, release, manifestSha)) {
    o.log(`gc dropped the pending entry of ${release} (older than its grace period): entering it again`);
    await store.updateHistory((now) =>
      protects(now, release, manifestSha)
        ? null
        : {
            ...now,
            pending: [
              ...now.pending.filter((p) => p.release !== release),
              { release, manifest_sha256: manifestSha, started_at: new Date().toISOString() },
            ],
          },
    );
  }
  ledger.clearStoreListing();
  await store.eachObjectSlice(
    (slice) =>
      ledger.listedInStore(
        'object',
        slice.map((s) => s.sha),
      ),
    o.concurrency,
  );
  const lost = ledger.lostCount();
  if (lost) o.log(`${lost} objects of ${release} were deleted by gc: uploading them again`);
  // The manifest's objects first: gc reads a pending release's manifest to know what it references.
  await uploadEach(ledger.lostObjects(manifestSha));
  return h;
}

/** Why the pointer did not move: a newer release is kept, or this one was retired meanwhile. */
function overtaken(store: ReleaseStore, release: string, current: string | null, h: ReleaseHistory): StorageError {
  const newest = h.releases.at(-1)?.release ?? 'none';
  const state = h.releases.some((r) => r.release === release)
    ? 'kept, but not the newest'
    : h.retired.some((r) => r.release === release)
      ? 'retired (a publish with --keep dropped it)'
      : 'no longer listed';
  return new StorageError(
    `${store.where}${POINTER_KEY} was not moved to ${release}: while it was being published, ${newest} became the newest kept release, and only the newest may become current. ` +
      `${release} is ${state} in ${store.where}${HISTORY_KEY}; current.json names ${current ?? 'nothing'}. ` +
      `If ${release} should be current, \`isoatlas rollback --to ${release}\` (if kept) or publish it again`,
  );
}

/** CloudFront caches the API's answers under unversioned URLs (/api/v1/…) and the pointer: those
 * must be invalidated when the release changes. Release files are versioned and never are. The
 * bucket prefix is the distribution's origin path (infra/stack.ts), so viewer paths never carry it. */
export async function invalidate(
  cloudfront: Pick<CloudFrontClient, 'send'>,
  distributionId: string,
): Promise<string[]> {
  const paths = ['/api/v1/*', `/${POINTER_KEY}`];
  await cloudfront.send(
    new CreateInvalidationCommand({
      DistributionId: distributionId,
      InvalidationBatch: { CallerReference: `isoatlas-${Date.now()}`, Paths: { Quantity: paths.length, Items: paths } },
    }),
  );
  return paths;
}

export interface RollbackResult {
  from: string;
  to: string;
  /** False when `to` was already the current release and the pin named it: nothing was written. */
  changed: boolean;
  invalidated: string[];
}

export interface RollbackOptions extends StoreLocation {
  to?: string;
  kvs?: PublishOptions['kvs'];
  /** For deployments without a KeyValueStore: invalidate the cached API answers, as publish does. */
  distributionId?: string;
  cloudfront?: Pick<CloudFrontClient, 'send'>;
  log?: (line: string) => void;
  /** As publish's. */
  unsafeSingleWriter?: boolean;
}

/** What a failed KeyValueStore write after the pointer moved leaves, and how to finish it. */
const pinBehind = (store: ReleaseStore, release: string, retry: string) =>
  `${store.where}${POINTER_KEY} names ${release} but the CDN still pins the release before it; ${retry} (or \`isoatlas rollback --to ${release}\`) to move the pin`;

/** `isoatlas rollback`: points current.json at an earlier kept release (by default the one before
 * the current release in the history), and the CDN's pin with it. */
export async function rollback(opts: RollbackOptions): Promise<RollbackResult> {
  const log = opts.log ?? (() => {});
  const store = openStore(opts);
  const current = await store.pointer();
  if (!current) throw new UsageError(`nothing is published at ${store.where}`);
  const history = await store.history();
  const names = history.releases.map((r) => r.release);
  // Back means back in the history (publish order), so a second rollback goes back once more; the
  // pointer's own `previous` (which a rollback sets to the release it left) only for a current
  // release the history does not list.
  const at = names.lastIndexOf(current.release);
  const targetName = opts.to ?? (at >= 0 ? names[at - 1] : current.previous);
  if (!targetName && at < 0)
    throw new UsageError(`no release before ${current.release} to roll back to in ${store.where}`);
  if (!targetName)
    throw new UsageError(
      `${current.release} is the earliest release kept in ${store.where} (kept, oldest first: ${names.join(', ')}); nothing before it to roll back to: see \`isoatlas releases\`, and --to <release> to move to another`,
    );
  const target = history.releases.find((r) => r.release === targetName);
  if (targetName !== current.release && !target)
    throw new UsageError(
      `release ${targetName} is not (or no longer) kept in ${store.where}; kept: ${names.join(', ') || 'none'} (see \`isoatlas releases\`)`,
    );
  const pin = await resolvePin(store, opts.kvs, 'rollback');
  if (!opts.unsafeSingleWriter) await store.checkConditionalWrites('rollback');
  if (pin) await recordPin(store, pin, opts.kvs?.replaces, log);
  const from = current.release;
  let changed = false;
  if (targetName !== current.release) {
    // Conditional on the pointer this rollback read, and on the target still being kept then.
    await store.updatePointer(async (now) => {
      if (now?.release !== current.release) {
        throw new StorageError(
          `${store.where}${POINTER_KEY} changed from ${current.release} to ${now?.release ?? 'nothing'} while rolling back (another publish or rollback); nothing was changed: see \`isoatlas releases\` and roll back again if still wanted`,
        );
      }
      const kept = (await store.history()).releases.find((r) => r.release === targetName);
      if (!kept)
        throw new StorageError(
          `release ${targetName} was retired while rolling back to it; nothing was changed: see \`isoatlas releases\` for the kept ones`,
        );
      return { format: 2, ...kept, previous: from };
    });
    changed = true;
  }
  // At the current release the pointer is there already; the pin may not be (a rollback or
  // publish whose KeyValueStore write failed, or one run without it).
  if (pin && (await movePin(store, pin, targetName, pinBehind(store, targetName, 'run the same rollback again'), log)))
    changed = true;
  const invalidated =
    changed && opts.distributionId
      ? await invalidate(opts.cloudfront ?? new CloudFrontClient({}), opts.distributionId)
      : [];
  return { from, to: targetName, changed, invalidated };
}

export interface ReleaseListing {
  current: string | null;
  releases: (PublishedRelease & { current: boolean })[];
  pending: ReleaseHistory['pending'];
  retired: ReleaseHistory['retired'];
  /** The CDN's pin, when the store records a KeyValueStore: the release it names now (null when it
   * names none), or why it could not be read. */
  pin: { kvs: string; release: string | null; error?: string } | null;
}

/** `isoatlas releases`: what the store keeps, which is current, what is pending or retired, and
 * what the CDN pins. */
export async function listReleases(opts: StoreLocation & { kvs?: KvsAccess }): Promise<ReleaseListing> {
  const store = openStore(opts);
  const [pointer, history, edge] = await Promise.all([store.pointer(), store.history(), store.edge()]);
  const current = pointer?.release ?? null;
  let pin: ReleaseListing['pin'] = null;
  if (edge) {
    // A listing is for looking: an unreachable KeyValueStore is said, not fatal.
    try {
      const reached = await resolvePin(store, opts.kvs, 'releases');
      pin = { kvs: edge.kvs, release: (await readPin(reached!, 'the pin is unknown')) ?? null };
    } catch (err) {
      pin = { kvs: edge.kvs, release: null, error: (err as Error).message };
    }
  }
  return {
    current,
    releases: history.releases.map((r) => ({ ...r, current: r.release === current })),
    pending: history.pending,
    retired: history.retired,
    pin,
  };
}
