// Reads a tree's manifest (index + shards) from anywhere (a directory, a bucket, a base URL),
// checking each shard against the hash the index lists and every entry for shape: manifest paths
// become local file names in a mirror, so none may point outside the tree.
import { createHash } from 'node:crypto';
import { treePaths, type ManifestEntry, type ManifestIndex, type ManifestShard } from '../edge/contract/tree.js';
import { isShardCount, shardOf } from '../edge/contract/shards.js';

/** Tree paths are built from SAFE_ID identifiers: no empty, `.` or `..` segment, no absolute path. */
export const SAFE_TREE_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
export const SHA256_HEX = /^[0-9a-f]{64}$/;

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

function validEntry(e: ManifestEntry): boolean {
  return Boolean(e) && typeof e.path === 'string' && SAFE_TREE_PATH.test(e.path) && Number.isSafeInteger(e.size) && e.size >= 0 && typeof e.sha256 === 'string' && SHA256_HEX.test(e.sha256);
}

function parse<T>(body: Buffer, where: string): T {
  try {
    return JSON.parse(body.toString('utf8')) as T;
  } catch (err) {
    throw new Error(`${where}: not JSON (${(err as Error).message})`);
  }
}

/** Parses manifest.json alone (for its release name and shard list). */
export function parseManifestIndex(body: Buffer, where: string): ManifestIndex {
  const index = parse<ManifestIndex>(body, where);
  if (!index || typeof index.release !== 'string' || index.format !== 2 || !Array.isArray(index.shards) || !isShardCount(index.shards.length)) {
    throw new Error(`${where}: not an isoatlas manifest of format 2 (rebuild the tree with this version of isoatlas)`);
  }
  index.shards.forEach((s, i) => {
    if (!validEntry(s) || s.path !== treePaths.manifestShard(i)) throw new Error(`${where}: invalid shard entry ${JSON.stringify(s).slice(0, 200)}`);
  });
  return index;
}

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
    const shard = parse<ManifestShard>(body, `${where}${entry.path}`);
    if (!shard || !Array.isArray(shard.entries)) throw new Error(`${where}${entry.path}: not a manifest shard`);
    for (const e of shard.entries) {
      if (!validEntry(e) || e.path === treePaths.manifest || e.path.startsWith('manifest/')) throw new Error(`${where}${entry.path}: invalid entry ${JSON.stringify(e).slice(0, 200)}`);
      if (shardOf(e.path, index.shards.length) !== i) throw new Error(`${where}${entry.path}: lists ${e.path}, which belongs to another shard`);
      if (seen.has(e.path)) throw new Error(`${where}: ${e.path} is listed twice`);
      seen.add(e.path);
      entries.push(e);
    }
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { index, indexBody, shards, entries };
}
