// manifest.json and its shards: every file of the tree with its size, sha256 and content type. The
// shards are hashed by path (contract/shards.ts), so the edge verifies a file by loading one shard;
// the index lists the shards with their own hashes, so one trusted hash (the pointer's
// manifest_sha256) vouches for the whole tree.
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  API_VERSION,
  MANIFEST_FORMAT,
  contentTypeOf,
  treePaths,
  type ManifestEntry,
  type ManifestIndex,
  type ManifestShard,
} from '../../edge/contract/tree.js';
import { shardCountFor, shardOf } from '../../edge/contract/shards.js';

async function put(root: string, path: string, text: string): Promise<ManifestEntry> {
  const data = Buffer.from(text, 'utf8');
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), data);
  return {
    path,
    size: data.length,
    sha256: createHash('sha256').update(data).digest('hex'),
    content_type: contentTypeOf(path),
  };
}

/** Writes the shards and then the index; returns the index and the number of files written. */
export async function writeManifest(
  root: string,
  release: string,
  entries: ManifestEntry[],
): Promise<{ index: ManifestIndex; written: number }> {
  // Small shards (~1,000 entries, ~160 KB): an edge instance verifying one file loads one shard.
  const count = shardCountFor(entries.length, 1024);
  const shards: ManifestEntry[][] = Array.from({ length: count }, () => []);
  let bytes = 0;
  for (const e of entries) {
    shards[shardOf(e.path, count)].push(e);
    bytes += e.size;
  }
  const listed: ManifestEntry[] = [];
  for (const [i, shard] of shards.entries()) {
    const body: ManifestShard = { entries: shard.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
    listed.push(await put(root, treePaths.manifestShard(i), JSON.stringify(body)));
  }
  const index: ManifestIndex = {
    release,
    api_version: API_VERSION,
    format: MANIFEST_FORMAT,
    files: entries.length,
    bytes,
    shards: listed,
  };
  await put(root, treePaths.manifest, JSON.stringify(index));
  return { index, written: listed.length + 1 };
}
