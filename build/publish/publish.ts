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
//   2. the packs of what this release adds (packing.ts), and every other file the store lacks;
//   3. the release moves from pending to the kept releases, and the pointer names it.
// Re-running an interrupted publish (its release still pending) lists the store once and uploads
// only what the first run did not, packs included: it takes the manifest (so the pack list) the
// store has for the release, since cutting packs again over a store that now holds the release's
// objects would give others.
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
import { forEachLimited } from '../common/concurrency.js';
import { openStore, type StoreLocation } from './s3-client.js';
import type { ReleaseStore } from '../../edge/store/release-store.js';
import { movePin, readPin, recordPin, resolvePin, type KvsAccess } from './edge-pin.js';
import { StorageError } from '../common/storage-errors.js';
import { checkTree } from './tree-check.js';
import { buildPack, cutPacks, earlierPacks, packListBody, readPacks } from './packing.js';
import { PublishLedger, type GeneratedObject, type LedgerObject } from './publish-ledger.js';
import { publishedManifest, readTree } from './published-manifest.js';

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
}

/** An object publish uploads: one of the release's (a shard object or a file), or one it generates. */
type ReleaseObject = LedgerObject | GeneratedObject;

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
  const concurrency = opts.concurrency ?? 16;
  const tree = await readTree(
    opts.dir,
    ledger,
    'build the tree again (`isoatlas build --force`) and publish that; nothing was written to the store',
  );
  const release = tree.index.release;
  if (!RELEASE_NAME.test(release))
    throw new UsageError(
      `release name ${JSON.stringify(release)} cannot be published: names are letters, digits, '.', '_' and '-' (it becomes a URL segment)`,
    );
  // What the name stands for: the tree's own manifest.json (the published one depends on the store).
  const treeSha = sha256Of(tree.indexBody);
  ledger.keepBody(treeSha, tree.indexBody, true);
  const store = openStore(opts);

  // Read before anything this publish learns about the store's objects: see the gc epoch above.
  const history = await store.history();
  const nameTaken = (h: ReleaseHistory) => {
    const used = usedNames(h).get(release);
    if (used !== undefined && used !== treeSha) throw nameUsed(store, release, used);
  };
  nameTaken(history);

  // The manifest as this store gets it (manifest-encoding.ts): the same tree again takes the manifest
  // the store has for it, pack list included; a new one is encoded against the current release. What
  // the store holds for sure is in the ledger after it.
  const published = await publishedManifest(store, history, tree, treeSha, ledger, concurrency, log);
  const { reused } = published;

  // The release's distinct objects: the manifest's shard objects first (heads and bases), then every
  // other file.
  ledger.fixObjects();

  // Before any write: a deployment whose pin this publish could not move is left untouched.
  const pin = await resolvePin(store, opts.kvs, 'publish');

  // An interrupted run of this release left objects and packs no kept release lists: one listing
  // of each finds them.
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
  const interrupted =
    reused && history.pending.some((p) => p.release === release && p.manifest_sha256 === published.sha256);
  if (interrupted) {
    await store.eachObjectSlice(
      (slice) => ledger.know(slice.filter((o) => o.size >= 0).map((o) => o.sha)),
      concurrency,
    );
    await listPacks();
  }
  ledger.markMissing();
  // Before anything is written: a tree changed since its build is refused whole (tree-check.ts).
  const checked = await checkTree({
    dir: opts.dir,
    files: { count: ledger.treeFileCount(), pages: () => ledger.treeFiles() },
    upload: { count: ledger.missingCount('file'), pages: () => ledger.objects({ kind: 'file', missing: true }) },
    held: (sha) => ledger.treeBody(sha),
    where: store.where,
    concurrency,
    progress: opts.progress,
  });
  // A shard object's bytes are in the ledger (the encoded ones are in no tree); a file's in the tree.
  const bodyOf = async (o: ReleaseObject, keep?: boolean) =>
    (o.kind === 'file' ? null : ledger.body(o.sha256)) ?? (await checked.body(o, keep));
  const treeBody = (sha256: string, keep?: boolean) => {
    const o = ledger.object(sha256);
    if (!o) throw new Error(`a pack of release ${release} holds object ${sha256}, which its tree does not list`);
    return bodyOf(o, keep);
  };

  // The packs (packing.ts): a new release packs what it adds; the same tree again takes the pack
  // list its manifest names, and builds again only the packs of its own objects the store lacks.
  let packList: Buffer | null;
  let publishedIndex: Buffer;
  if (reused) {
    packList = await readPacks(store, published.index, `release ${release}'s ${treePaths.manifest}`, (p) =>
      ledger.addPack(p, false),
    );
    if (packList) ledger.know([sha256Of(packList)]);
    ledger.knowPackIndexes();
    publishedIndex = published.indexBody;
    if (interrupted) ledger.buildUnlisted();
  } else {
    await cutPacks(
      ledger.objects({ missing: true }),
      (o) => treeBody(o.sha256, true),
      concurrency,
      (p) => ledger.addPack(p, true),
      opts.packTargetBytes,
    );
    await earlierPacks(store, history.releases, ledger.earlierPacksSink(), log);
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

  const summary: PublishSummary = {
    release,
    previous: null,
    objects: total,
    uploaded: 0,
    present: 0,
    bytesUploaded: 0,
    manifestBytesUploaded: 0,
    packs: 0,
    packBytes: 0,
    seconds: 0,
    retired: [],
    invalidated: [],
  };
  // The first writes: a server without conditional writes is refused before any (its probe object
  // aside), and the store records its KeyValueStore.
  if (!opts.unsafeSingleWriter) await store.checkConditionalWrites('publish');
  if (pin) await recordPin(store, pin, opts.kvs?.replaces, log);
  const put = async (o: ReleaseObject, body: Buffer) => {
    await store.putObject(o.sha256, body, o.content_type);
    summary.uploaded += 1;
    summary.bytesUploaded += body.length;
    if (o.kind === 'shard' || o.sha256 === manifestSha) summary.manifestBytesUploaded += body.length;
  };
  const upload = async (o: ReleaseObject) => put(o, ledger.generatedBody(o.sha256) ?? (await bodyOf(o)));
  const uploadEach = async (pages: Iterable<readonly ReleaseObject[]>) => {
    for (const page of pages) await forEachLimited(page, concurrency, upload);
  };

  // Before the first upload: gc keeps every object younger than a pending release's start.
  const startedAt = new Date().toISOString();
  const bar =
    opts.progress === false
      ? { tick() {}, stop() {} }
      : startProgress('publishing', total + ledger.packsToBuildCount());
  // Each pack is built from its objects' bodies, which uploads the files the store lacks on the way
  // (each pending file once).
  const uploadPacks = async (tick: () => void) => {
    for (const p of ledger.packsToBuild()) {
      const body = await buildPack(
        p,
        async ({ sha256 }) => {
          const body = await treeBody(sha256);
          if (ledger.claimPending(sha256)) {
            await put(ledger.object(sha256)!, body);
            tick();
          }
          return body;
        },
        concurrency,
      );
      await store.putPack(p.ref.sha256, body);
      summary.packs += 1;
      summary.packBytes += body.length;
      tick();
    }
  };
  try {
    // 1. The manifest (its shard objects, then manifest.json with its pack list and pack indexes),
    //    then the release as pending (its name recorded for good).
    await uploadEach(ledger.objects({ kind: 'shard', unknown: true }));
    await uploadEach(ledger.generatedObjects({ unknown: true }));
    bar.tick(ledger.objectCount('shard') + ledger.generatedCount());
    await store.updateHistory((h) => {
      nameTaken(h);
      const listed = protects(h, release, manifestSha);
      if (listed && h.names?.[release] === treeSha) return null;
      const pending = listed
        ? h.pending
        : [...h.pending, { release, manifest_sha256: manifestSha, started_at: startedAt }];
      return { ...h, pending, names: { ...Object.fromEntries(usedNames(h)), [release]: treeSha } };
    });
    // 2. The packs, and every other file the store lacks.
    const pending = ledger.markPending();
    bar.tick(ledger.objectCount('file') - pending);
    await uploadPacks(() => bar.tick());
    for (const page of ledger.pendingFiles())
      await forEachLimited(page, concurrency, async (o) => {
        if (!ledger.claimPending(o.sha256)) return;
        await upload(o);
        bar.tick();
      });
  } finally {
    bar.stop();
  }

  // 3. Kept, then current.
  const publishedAt = new Date().toISOString();
  const entry: PublishedRelease = { release, manifest_sha256: manifestSha, published_at: publishedAt };
  const keep = opts.keep;
  let seen = history;
  for (let check = 1; ; check++) {
    let trusted = false;
    await store.updateHistory((h): ReleaseHistory | null => {
      trusted = protects(h, release, manifestSha) && !gcDeletedSince(seen, h);
      return trusted ? keepRelease(h, entry, keep, summary) : null;
    });
    if (trusted) break;
    if (check === 3)
      throw new StorageError(
        `gc kept deleting objects of ${store.where} while this publish checked them; publish again when gc has finished (it uploads only what is missing)`,
      );
    seen = await recheck(store, release, manifestSha, ledger, uploadEach, {
      concurrency,
      log,
      waitMs: opts.gcWaitMs ?? GC_WAIT_MS,
    });
    // The packs built from the release's own objects that the store lacks now.
    await listPacks();
    ledger.buildUnlisted();
    await uploadPacks(() => {});
  }
  summary.present = Math.max(0, total - summary.uploaded);
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

  if (opts.distributionId)
    summary.invalidated = await invalidate(opts.cloudfront ?? new CloudFrontClient({}), opts.distributionId);
  summary.seconds = (performance.now() - started) / 1000;
  return summary;
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
  summary: PublishSummary,
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
