// The manifest publish writes for a tree, and what the store holds for sure, worked out a shard at a
// time into publish's ledger (publish-ledger.ts) so that no whole manifest is held: the tree's
// manifest is read into it, then the manifest published for the same data before (a re-run, or the
// same release again) or the current release's, each shard beside the tree's same shard, then the
// kept releases' listings (knownObjects). publish.ts says why each is needed.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { objectKey, usedNames, type PublishedRelease, type ReleaseHistory } from '../../edge/contract/store-layout.js';
import { treePaths, type ManifestEntry, type ManifestIndex } from '../../edge/contract/tree.js';
import { parseManifestIndex } from '../../edge/contract/manifest.js';
import { parsePackList } from '../../edge/contract/packs.js';
import type { ReleaseStore } from '../../edge/store/release-store.js';
import { BadInputError } from '../common/errors.js';
import { forEachLimited } from '../common/concurrency.js';
import {
  eachShard,
  loadShard,
  ManifestProblem,
  readManifestIndex,
  type LoadedShard,
  type ManifestRead,
} from '../common/manifest-reader.js';
import { encodeShard, manifestBody, planShard, rebasedShards } from './manifest-encoding.js';
import type { PublishLedger } from './publish-ledger.js';

/** A manifest as read (or as publish writes it): its index, the index's bytes and their sha256. */
export interface ManifestRecord {
  index: ManifestIndex;
  indexBody: Buffer;
  sha256: string;
}

/** Reads and checks the tree's manifest into the ledger: its files (each shard's also handed to
 * `files`), and where its own manifest objects are (checked here; publish reads them again, checked
 * again, when it uploads them). */
export async function readTree(
  dir: string,
  ledger: PublishLedger,
  advice: string,
  files: (entries: readonly ManifestEntry[]) => void = () => {},
): Promise<Omit<ManifestRecord, 'sha256'>> {
  const read: ManifestRead = async (path) => readFile(join(dir, path)).catch(() => null);
  const where = `${dir}/`;
  const { index, indexBody } = await readManifestIndex(read, where, advice);
  await eachShard(
    read,
    index,
    where,
    (i, { shard, objects }) => {
      const twice = ledger.addTreeShard(i, shard.entries);
      if (twice !== null) throw new BadInputError(`${where}: ${twice} is listed twice; ${advice}`);
      files(shard.entries);
      for (const o of objects) ledger.treeObject(o.entry.sha256, o.entry.path);
      // A head with a chain lists its bases too (a rendered tree's shards are full).
      if (shard.bases.length) ledger.recordHead(shard.head.sha256, listedBy(shard), true);
    },
    advice,
  );
  return { index, indexBody };
}

const sha256Of = (body: Buffer) => createHash('sha256').update(body).digest('hex');

/** What a shard's head lists: its bases and its files. */
const listedBy = (shard: LoadedShard) => [...shard.bases.map((b) => b.sha256), ...shard.entries.map((e) => e.sha256)];

/** The store's reads this module makes (prefetchReads starts some of them early). */
export type StoreReads = Pick<ReleaseStore, 'get' | 'pointer' | 'where'>;

/** Shard heads of the current release fetched ahead: enough for the first rounds of reads, few
 * enough that a large manifest is not held whole. */
const PREFETCH_SHARDS = 64;
/** Pack indexes of the current release fetched ahead, on the same grounds. */
const PREFETCH_PACK_INDEXES = 8;

/** The store's reads a publish starts before it has read its tree, so that they arrive while it
 * does: the history, the pointer, the current release's manifest.json, its first shard heads, its
 * pack list and first pack indexes. What they find is only used as the history read then allows
 * (publish.ts: the gc epoch), and every object read is checked against its sha256 as any other. A
 * prefetched object other than manifest.json is handed over once. */
export function prefetchReads(store: ReleaseStore): { history: Promise<ReleaseHistory>; reads: StoreReads } {
  const early = new Map<string, Promise<{ body: Buffer; etag: string } | null>>();
  // Each is awaited later, or never when publish fails first: never an unhandled rejection.
  const handled = <T>(p: Promise<T>) => {
    p.catch(() => {});
    return p;
  };
  const history = handled(store.history());
  const pointer = handled(store.pointer());
  let indexKey = '';
  handled(
    pointer.then(async (current) => {
      if (!current) return;
      indexKey = objectKey(current.manifest_sha256);
      const read = handled(store.get(indexKey));
      early.set(indexKey, read);
      const got = await read;
      if (!got) return;
      const index = parseManifestIndex(got.body, indexKey);
      const ahead = (sha256: string) => {
        const read = handled(store.get(objectKey(sha256)));
        early.set(objectKey(sha256), read);
        return read;
      };
      for (const { sha256 } of index.shards.slice(0, PREFETCH_SHARDS)) ahead(sha256);
      // Its pack list and first pack indexes, which publish reads after the shards (earlierPacks).
      if (!index.packs) return;
      const list = await ahead(index.packs.sha256);
      if (!list) return;
      const refs = parsePackList(list.body, objectKey(index.packs.sha256)).packs.slice(0, PREFETCH_PACK_INDEXES);
      for (const ref of refs) ahead(ref.index.sha256);
    }),
  );
  return {
    history,
    reads: {
      where: store.where,
      pointer: () => pointer,
      get: (key) => {
        const got = early.get(key);
        if (!got) return store.get(key);
        // manifest.json is read again (knownObjects); a shard once.
        if (key !== indexKey) early.delete(key);
        return got;
      },
    },
  };
}

/** Reads a manifest object of the store, and what it lists, by the sha256s it names. */
const storeRead =
  (store: StoreReads, manifestSha: string): ManifestRead =>
  async (path, listed) =>
    (await store.get(objectKey(path === treePaths.manifest ? manifestSha : listed!.sha256)))?.body ?? null;

const sameEntries = (a: readonly ManifestEntry[], b: readonly ManifestEntry[]) =>
  a.length === b.length &&
  a.every(
    (e, i) =>
      e.path === b[i].path && e.size === b[i].size && e.sha256 === b[i].sha256 && e.content_type === b[i].content_type,
  );

class NotTheSame extends Error {}

/** The manifest this publish writes, with its shard objects recorded in the ledger and what the
 * store holds for sure (knownObjects) known there. The same data under a name the store holds: the
 * manifest published for it before, when the store still has it whole (`reused`). Otherwise the
 * tree's, encoded against the current release (a shard whose full object the store holds is listed
 * as it is); a current release whose manifest cannot be read is said, and every shard is written full. */
export async function publishedManifest(
  store: StoreReads,
  history: ReleaseHistory,
  tree: Omit<ManifestRecord, 'sha256'>,
  treeSha: string,
  ledger: PublishLedger,
  concurrency: number,
  log: (line: string) => void,
): Promise<ManifestRecord & { reused: boolean }> {
  const release = tree.index.release;
  const count = tree.index.shards.length;
  if (usedNames(history).get(release) === treeSha) {
    const earlier = [...history.retired, ...history.releases, ...history.pending].filter((r) => r.release === release);
    for (const r of earlier.reverse()) {
      const got = await publishedBefore(store, r, tree.index, ledger).catch((err) => {
        if (err instanceof BadInputError) return null;
        throw err;
      });
      if (got) {
        await knownObjects(store, history, tree.index, ledger, concurrency, log);
        return { ...got, reused: true };
      }
    }
  }
  ledger.forgetCurrentRelease();
  ledger.clearManifestObjects();
  const pointer = await store.pointer();
  let planned = false;
  if (pointer) {
    const read = storeRead(store, pointer.manifest_sha256);
    const where = `${store.where} (release ${pointer.release}) `;
    try {
      const { index } = await readManifestIndex(read, where);
      await eachShard(read, index, where, (i, { shard, objects }) => {
        for (const o of objects) ledger.keepBody(o.entry.sha256, o.body);
        ledger.recordHead(shard.head.sha256, listedBy(shard));
        if (index.shards.length !== count) return;
        const { plan, deltaBody } = planShard(i, shard, ledger.treeShard(i));
        if (deltaBody) ledger.keepBody(plan.delta!.sha256, deltaBody);
        ledger.recordPlan(plan);
      });
      planned = index.shards.length === count;
      ledger.recordedWhole(pointer.manifest_sha256);
    } catch (err) {
      if (!(err instanceof BadInputError)) throw err;
      log(`${err.message}: the manifest of ${release} is written whole, not as a change from ${pointer.release}`);
      ledger.forgetCurrentRelease();
    }
  }
  await knownObjects(store, history, tree.index, ledger, concurrency, log);
  const rebased = planned ? rebasedShards(ledger.changedShards(), count) : new Set<number>();
  const heads = tree.index.shards.map((treeHead, i) => {
    const { head, objects } = encodeShard(
      treeHead,
      planned ? ledger.plan(i) : null,
      rebased.has(i),
      ledger.isKnown(treeHead.sha256),
    );
    ledger.addManifestObjects(i, objects);
    return head;
  });
  const index: ManifestIndex = { ...tree.index, shards: heads };
  const indexBody = manifestBody(index);
  return { index, indexBody, sha256: sha256Of(indexBody), reused: false };
}

/** The manifest published before for release `r`, if the store has it whole and it lists the same
 * files as the tree: its shard objects are recorded in the ledger as the published manifest's, its
 * heads' listings as the current release's. Null when it lists other files. */
async function publishedBefore(
  store: StoreReads,
  r: { release: string; manifest_sha256: string },
  tree: ManifestIndex,
  ledger: PublishLedger,
): Promise<ManifestRecord | null> {
  ledger.forgetCurrentRelease();
  ledger.clearManifestObjects();
  const read = storeRead(store, r.manifest_sha256);
  const where = `${store.where} (release ${r.release}) `;
  const { index, indexBody } = await readManifestIndex(read, where);
  if (index.release !== tree.release || index.shards.length !== tree.shards.length) return null;
  try {
    await eachShard(read, index, where, (i, { shard, objects }) => {
      if (!sameEntries(shard.entries, ledger.treeShard(i))) throw new NotTheSame();
      for (const o of objects) ledger.keepBody(o.entry.sha256, o.body);
      ledger.addManifestObjects(
        i,
        objects.map((o) => o.entry),
      );
      ledger.recordHead(shard.head.sha256, listedBy(shard));
    });
  } catch (err) {
    if (err instanceof NotTheSame) return null;
    throw err;
  }
  ledger.recordedWhole(r.manifest_sha256);
  return { index, indexBody, sha256: r.manifest_sha256 };
}

/** What the store holds for sure, into the ledger: everything its kept releases list. A kept
 * release's shard whose head object is the tree's or the current release's lists what that one does,
 * so only the shards that differ are read (a head and its chain of bases). A kept release whose
 * manifest is gone (a gc forced below its safe grace) is reported and left out: this publish uploads
 * what it would have found there. */
async function knownObjects(
  store: StoreReads,
  history: ReleaseHistory,
  tree: ManifestIndex,
  ledger: PublishLedger,
  concurrency: number,
  log: (line: string) => void,
): Promise<void> {
  const treeShards = new Map(tree.shards.map((s, i) => [s.sha256, i]));
  // Older releases' chains mostly share their bases with the current release's: those are read once.
  const readShared: ManifestRead = async (_path, listed) => {
    const had = listed && ledger.body(listed.sha256);
    if (had) return had;
    const got = (await store.get(objectKey(listed!.sha256)))?.body ?? null;
    if (got && listed) ledger.keepBody(listed.sha256, got);
    return got;
  };
  const broken = (r: PublishedRelease, key: string, what: string) =>
    log(
      `${store.where}${key}: ${what} of kept release ${r.release} is missing from the store, so that release is broken; this publish does not rely on it. Publish ${r.release} again (or roll back past it)`,
    );
  for (const r of history.releases) {
    if (ledger.isKnown(r.manifest_sha256)) continue;
    const got = await store.get(objectKey(r.manifest_sha256));
    if (!got) {
      broken(r, objectKey(r.manifest_sha256), 'the manifest');
      continue;
    }
    const where = `${store.where} (release ${r.release}) `;
    const index = parseManifestIndex(got.body, `${where}${treePaths.manifest}`);
    // The manifest read whole above (the current release's, usually): its listing is recorded already.
    if (
      ledger.knowRecorded(
        r.manifest_sha256,
        index.shards.map((s) => s.sha256),
      )
    )
      continue;
    // What this release lists counts only once all of its manifest was found.
    ledger.startListing();
    ledger.list([r.manifest_sha256]);
    let whole = true;
    const shards = [...index.shards.keys()].filter((i) => !ledger.isKnown(index.shards[i].sha256));
    await forEachLimited(shards, concurrency, async (i) => {
      const head = index.shards[i];
      ledger.list([head.sha256]);
      if (ledger.hasHead(head.sha256)) return ledger.listHead(head.sha256);
      const inTree = treeShards.get(head.sha256);
      if (inTree !== undefined) return ledger.listTreeShard(inTree);
      try {
        const { shard } = await loadShard(readShared, index, i, where);
        ledger.list(listedBy(shard));
      } catch (err) {
        if (!(err instanceof ManifestProblem)) throw err;
        if (whole) broken(r, objectKey(head.sha256), `a manifest shard (${err.message})`);
        whole = false;
      }
    });
    if (whole) ledger.countListing();
  }
}
