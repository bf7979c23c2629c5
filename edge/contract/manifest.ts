// The one parser of manifest.json and its shards, used by the edge (which serves only what the
// manifest lists), `isoatlas serve`, publish and mirror. It checks shape only; each reader checks the
// bytes against the listed sha256 with the hash function its runtime has. Manifest paths become
// local file names in a mirror, so none may point outside the tree.
import { MANIFEST_FORMAT, treePaths, type ManifestEntry, type ManifestIndex, type ManifestShard } from './tree.js';
import { isShardCount, shardOf } from './shards.js';

/** Tree paths are built from SAFE_ID identifiers: no empty, `.` or `..` segment, no absolute path. */
export const SAFE_TREE_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
export const SHA256_HEX = /^[0-9a-f]{64}$/;

const decoder = new TextDecoder();

function validEntry(e: ManifestEntry): boolean {
  return (
    Boolean(e) &&
    typeof e.path === 'string' &&
    SAFE_TREE_PATH.test(e.path) &&
    Number.isSafeInteger(e.size) &&
    e.size >= 0 &&
    typeof e.sha256 === 'string' &&
    SHA256_HEX.test(e.sha256)
  );
}

function parse<T>(body: Uint8Array, where: string): T {
  try {
    return JSON.parse(decoder.decode(body)) as T;
  } catch (err) {
    throw new Error(`${where}: not JSON (${(err as Error).message})`);
  }
}

/** manifest.json: its release name and its shards, each with its path, size and sha256. `where`
 * names the file in messages. */
export function parseManifestIndex(body: Uint8Array, where: string): ManifestIndex {
  const index = parse<ManifestIndex>(body, where);
  if (
    !index ||
    typeof index.release !== 'string' ||
    index.format !== MANIFEST_FORMAT ||
    !Array.isArray(index.shards) ||
    !isShardCount(index.shards.length)
  ) {
    throw new Error(
      `${where}: not an isoatlas manifest of format ${MANIFEST_FORMAT} (rebuild the tree with this version of isoatlas)`,
    );
  }
  const packs = index.packs;
  if (
    packs !== undefined &&
    (!packs || typeof packs.sha256 !== 'string' || !SHA256_HEX.test(packs.sha256) || !Number.isSafeInteger(packs.size))
  )
    throw new Error(`${where}: invalid packs member ${JSON.stringify(packs).slice(0, 200)}`);
  index.shards.forEach((s, i) => {
    if (!validEntry(s) || s.path !== treePaths.manifestShard(i))
      throw new Error(`${where}: invalid shard entry ${JSON.stringify(s).slice(0, 200)}`);
  });
  return index;
}

/** Shard `n` of `count`: its entries, each valid and hashed to this shard. */
export function parseManifestShard(body: Uint8Array, n: number, count: number, where: string): ManifestEntry[] {
  const shard = parse<ManifestShard>(body, where);
  if (!shard || !Array.isArray(shard.entries)) throw new Error(`${where}: not a manifest shard`);
  for (const e of shard.entries) {
    if (!validEntry(e) || e.path === treePaths.manifest || e.path.startsWith('manifest/'))
      throw new Error(`${where}: invalid entry ${JSON.stringify(e).slice(0, 200)}`);
    if (shardOf(e.path, count) !== n) throw new Error(`${where}: lists ${e.path}, which belongs to another shard`);
  }
  return shard.entries;
}
