// Reads a tree's whole manifest (index + shards) from anywhere (a directory, a bucket, a base URL),
// checking each shard against the hash the index lists; the shape of each file is checked by the
// contract's parser.
import { createHash } from 'node:crypto';
import { treePaths, type ManifestEntry, type ManifestIndex } from '../edge/contract/tree.js';
import { parseManifestIndex, parseManifestShard } from '../edge/contract/manifest.js';


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
 * shard it is told the entry the index lists (a mirror may then take a verified local copy). */
export async function loadManifest(read: (path: string, listed?: ManifestEntry) => Promise<Buffer | null>, where: string): Promise<LoadedManifest> {
  const indexBody = await read(treePaths.manifest);
  if (!indexBody) throw new Error(`${where} has no ${treePaths.manifest}: not a rendered isoatlas tree`);
  const index = parseManifestIndex(indexBody, `${where}${treePaths.manifest}`);
  const shards: LoadedManifest['shards'] = [];
  const entries: ManifestEntry[] = [];
  const seen = new Set<string>();
  for (const [i, entry] of index.shards.entries()) {
    const body = await read(entry.path, entry);
    if (!body) throw new Error(`${where}${entry.path}: missing, though ${treePaths.manifest} lists it`);
    if (body.length !== entry.size || sha256(body) !== entry.sha256) throw new Error(`${where}${entry.path}: does not match the sha256 ${treePaths.manifest} lists`);
    shards.push({ entry, body });
    for (const e of parseManifestShard(body, i, index.shards.length, `${where}${entry.path}`)) {
      if (seen.has(e.path)) throw new Error(`${where}: ${e.path} is listed twice`);
      seen.add(e.path);
      entries.push(e);
    }
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { index, indexBody, shards, entries };
}
