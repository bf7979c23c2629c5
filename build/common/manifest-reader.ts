// Reads a tree's whole manifest (index + shards) from anywhere (a directory, a bucket, a base URL),
// checking each shard against the hash the index lists; the shape of each file is checked by the
// contract's parser. A manifest that is missing, malformed or does not match its files is bad input
// (exit 3), named with where it was read and what to do about it.
import { createHash } from 'node:crypto';
import { BadInputError } from './errors.js';
import { treePaths, type ManifestEntry, type ManifestIndex } from '../../edge/contract/tree.js';
import { parseManifestIndex, parseManifestShard } from '../../edge/contract/manifest.js';

export interface LoadedManifest {
  index: ManifestIndex;
  /** manifest.json as read. */
  indexBody: Buffer;
  /** The shard files, as listed by the index and as read. */
  shards: { entry: ManifestEntry; body: Buffer }[];
  /** Every other file of the tree, in path order. */
  entries: ManifestEntry[];
}

const sha256 = (body: Buffer) => createHash('sha256').update(body).digest('hex');

/** Reads and checks the whole manifest. `read` answers a tree path with its bytes, or null; for a
 * shard it is told the entry the index lists (a mirror may then take a verified local copy). Its own
 * failures (storage, network) pass through; what is wrong with the manifest is a BadInputError, ending
 * with `advice` when the caller knows what to do about it (e.g. rebuild the tree). */
export async function loadManifest(
  read: (path: string, listed?: ManifestEntry) => Promise<Buffer | null>,
  where: string,
  advice?: string,
): Promise<LoadedManifest> {
  const bad = (problem: string) => new BadInputError(advice ? `${problem}; ${advice}` : problem);
  const parsed = <T>(parse: () => T): T => {
    try {
      return parse();
    } catch (err) {
      throw bad((err as Error).message);
    }
  };
  const indexBody = await read(treePaths.manifest);
  if (!indexBody) throw bad(`${where} has no ${treePaths.manifest}: not a rendered isoatlas tree`);
  const index = parsed(() => parseManifestIndex(indexBody, `${where}${treePaths.manifest}`));
  const shards: LoadedManifest['shards'] = [];
  const entries: ManifestEntry[] = [];
  const seen = new Set<string>();
  for (const [i, entry] of index.shards.entries()) {
    const body = await read(entry.path, entry);
    if (!body) throw bad(`${where}${entry.path}: missing, though ${treePaths.manifest} lists it`);
    if (body.length !== entry.size || sha256(body) !== entry.sha256)
      throw bad(`${where}${entry.path}: does not match the sha256 ${treePaths.manifest} lists`);
    shards.push({ entry, body });
    for (const e of parsed(() => parseManifestShard(body, i, index.shards.length, `${where}${entry.path}`))) {
      if (seen.has(e.path)) throw bad(`${where}: ${e.path} is listed twice`);
      seen.add(e.path);
      entries.push(e);
    }
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { index, indexBody, shards, entries };
}
