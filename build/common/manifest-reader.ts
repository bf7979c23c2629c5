// Reads a tree's whole manifest (index + shards) from anywhere (a directory, a bucket, a base URL),
// checking each shard object against the hash the index (or, for a delta's bases, its head) lists;
// the shape of each file is checked by the contract's parser, and a delta shard is resolved through
// its chain of bases (edge/contract/manifest.ts). A manifest that is missing, malformed or does not
// match its files is bad input (exit 3), named with where it was read and what to do about it.
import { createHash } from 'node:crypto';
import { BadInputError } from './errors.js';
import { forEachLimited } from './concurrency.js';
import { treePaths, type ManifestEntry, type ManifestIndex } from '../../edge/contract/tree.js';
import {
  parseManifestIndex,
  parseShardObject,
  resolveChain,
  resolveChainOver,
  type ShardObject,
  type ShardRef,
} from '../../edge/contract/manifest.js';

/** Answers a tree path with its bytes, or null; for a shard object it is told the entry listing it
 * (a base of shard i is asked for as `manifest/<i>.json` with the base's sha256 and size): a store
 * reads it by that sha256, a mirror may take a verified local copy. */
export type ManifestRead = (path: string, listed?: ManifestEntry) => Promise<Buffer | null>;

/** One shard of a loaded manifest. */
export interface LoadedShard {
  /** The object manifest.json lists for it (full, or the head of a chain). */
  head: ManifestEntry;
  /** The head's chain of bases, nearest first (none for a full shard). */
  bases: ShardRef[];
  /** Its files, resolved through the chain, sorted by path; with `over`, only those the objects
   * before that base decide. */
  entries: ManifestEntry[];
  /** The base the reader knew the shard of (loadShard's `known`): neither it nor the bases after it
   * were read. */
  over?: ShardRef;
}

/** Whether the reader knows the files of the shard that `base` stands for with `rest` (the bases
 * after it) as its chain: a mirror's record of the shards it verified (edge/mirror/verified-shards.ts). */
export type KnownShard = (base: ShardRef, rest: ShardRef[]) => boolean;

export interface LoadedManifest {
  index: ManifestIndex;
  /** manifest.json as read. */
  indexBody: Buffer;
  /** Every shard object read, once each: the heads the index lists and their bases. */
  shards: { entry: ManifestEntry; body: Buffer }[];
  /** Shard i of the index, resolved. */
  byShard: LoadedShard[];
  /** Every other file of the tree, in path order. */
  entries: ManifestEntry[];
}

const sha256 = (body: Buffer) => createHash('sha256').update(body).digest('hex');

/** Shard chains read at once: a chain is read in one parallel round trip after its head. */
const SHARDS_IN_FLIGHT = 8;

/** What is wrong with a manifest's shard object (not a failure to read it). */
export class ManifestProblem extends Error {}

/** Reads and checks one shard: its head (as the index lists it), then its bases in parallel, each
 * against the sha256 and size the head lists. What is wrong with them is a ManifestProblem naming the
 * object; failures of `read` pass through. */
export async function loadShard(
  read: ManifestRead,
  index: ManifestIndex,
  i: number,
  where: string,
  known?: KnownShard,
): Promise<{ shard: LoadedShard; objects: { entry: ManifestEntry; body: Buffer }[] }> {
  const head = index.shards[i];
  const count = index.shards.length;
  const fetch = async (listed: ManifestEntry, what: string) => {
    const body = await read(listed.path, listed);
    if (!body)
      throw new ManifestProblem(
        `${where}${listed.path}: ${what} ${listed.sha256} is missing, though ${treePaths.manifest} lists it`,
      );
    if (body.length !== listed.size || sha256(body) !== listed.sha256)
      throw new ManifestProblem(
        `${where}${listed.path}: ${what} does not match the sha256 ${treePaths.manifest} lists`,
      );
    return body;
  };
  const checked = <T>(parse: () => T): T => {
    try {
      return parse();
    } catch (err) {
      throw new ManifestProblem((err as Error).message);
    }
  };
  const headBody = await fetch(head, 'shard object');
  const deltas = index.format !== 2;
  const parsedHead = checked(() => parseShardObject(headBody, i, count, `${where}${head.path}`, deltas));
  // The nearest base whose shard the reader knows: the chain is read down to it, not past it.
  const over = known ? parsedHead.bases.findIndex((b, k) => known(b, parsedHead.bases.slice(k + 1))) : -1;
  const toRead = over < 0 ? parsedHead.bases : parsedHead.bases.slice(0, over);
  const baseEntries = toRead.map((b) => ({ ...head, sha256: b.sha256, size: b.size }));
  const baseBodies = await Promise.all(baseEntries.map((b) => fetch(b, 'base shard object')));
  const bases: ShardObject[] = baseBodies.map((body, k) =>
    checked(() => parseShardObject(body, i, count, `${where}${head.path} (base ${baseEntries[k].sha256})`, deltas)),
  );
  const entries = checked(() =>
    over < 0
      ? resolveChain(parsedHead, bases, `${where}${head.path}`)
      : resolveChainOver(parsedHead, bases, `${where}${head.path}`),
  );
  return {
    shard: { head, bases: parsedHead.bases, entries, ...(over < 0 ? {} : { over: parsedHead.bases[over] }) },
    objects: [{ entry: head, body: headBody }, ...baseEntries.map((entry, k) => ({ entry, body: baseBodies[k] }))],
  };
}

/** Reads and checks manifest.json alone. Its own failures pass through; what is wrong with it is a
 * BadInputError, ending with `advice` (as loadManifest's). */
export async function readManifestIndex(
  read: ManifestRead,
  where: string,
  advice?: string,
): Promise<{ index: ManifestIndex; indexBody: Buffer }> {
  const bad = (problem: string) => new BadInputError(advice ? `${problem}; ${advice}` : problem);
  const indexBody = await read(treePaths.manifest);
  if (!indexBody) throw bad(`${where} has no ${treePaths.manifest}: not a rendered isoatlas tree`);
  try {
    return { index: parseManifestIndex(indexBody, `${where}${treePaths.manifest}`), indexBody };
  } catch (err) {
    throw bad((err as Error).message);
  }
}

/** Reads and checks a manifest's shards, `inFlight` at a time, handing each to `each` as it is read
 * and keeping none: what streams a manifest of any size in bounded memory (gc, nginx-config). With
 * one in flight, shards come in index order. Errors as loadManifest's. */
export async function eachShard(
  read: ManifestRead,
  index: ManifestIndex,
  where: string,
  each: (i: number, loaded: Awaited<ReturnType<typeof loadShard>>) => void | Promise<void>,
  advice?: string,
  inFlight = SHARDS_IN_FLIGHT,
): Promise<void> {
  const bad = (problem: string) => new BadInputError(advice ? `${problem}; ${advice}` : problem);
  await forEachLimited([...index.shards.keys()], inFlight, async (i) => {
    let loaded: Awaited<ReturnType<typeof loadShard>>;
    try {
      loaded = await loadShard(read, index, i, where);
    } catch (err) {
      // A failure to read (storage, network) is the caller's to report.
      throw err instanceof ManifestProblem ? bad(err.message) : err;
    }
    await each(i, loaded);
  });
}

/** Reads and checks the whole manifest. Its own failures (storage, network) pass through; what is
 * wrong with the manifest is a BadInputError, ending with `advice` when the caller knows what to do
 * about it (e.g. rebuild the tree). */
export async function loadManifest(read: ManifestRead, where: string, advice?: string): Promise<LoadedManifest> {
  const bad = (problem: string) => new BadInputError(advice ? `${problem}; ${advice}` : problem);
  const { index, indexBody } = await readManifestIndex(read, where, advice);
  const loaded: Awaited<ReturnType<typeof loadShard>>[] = [];
  await eachShard(
    read,
    index,
    where,
    (i, shard) => {
      loaded[i] = shard;
    },
    advice,
  );
  const shards: LoadedManifest['shards'] = [];
  const held = new Set<string>();
  for (const { objects } of loaded)
    for (const o of objects)
      if (!held.has(o.entry.sha256)) {
        held.add(o.entry.sha256);
        shards.push(o);
      }
  const entries: ManifestEntry[] = [];
  const seen = new Set<string>();
  for (const { shard } of loaded)
    for (const e of shard.entries) {
      if (seen.has(e.path)) throw bad(`${where}: ${e.path} is listed twice`);
      seen.add(e.path);
      entries.push(e);
    }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { index, indexBody, shards, byShard: loaded.map((l) => l.shard), entries };
}

/** Reads and checks a manifest shard by shard, in index order, handing each shard's resolved entries
 * (sorted by path) to `visit` before the next is read: what a reader holds is one shard, whatever the
 * release's size. Failures are reported as loadManifest reports them. Returns the index and its bytes. */
export async function forEachManifestShard(
  read: ManifestRead,
  where: string,
  visit: (entries: ManifestEntry[], shard: number) => Promise<void> | void,
  advice?: string,
): Promise<{ index: ManifestIndex; indexBody: Buffer }> {
  const { index, indexBody } = await readManifestIndex(read, where, advice);
  await eachShard(read, index, where, (i, loaded) => visit(loaded.shard.entries, i), advice, 1);
  return { index, indexBody };
}
