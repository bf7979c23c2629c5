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

/** Where a manifest's entries come from: how many files, their bytes, and every entry with its shard
 * for a given shard count, grouped by shard in shard order (within a shard, any order). */
export interface ManifestSource {
  files: number;
  bytes: number;
  byShard(count: number): Iterable<[shard: number, entry: ManifestEntry]>;
}

const byPath = (a: ManifestEntry, b: ManifestEntry) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** Writes the shards, one at a time, and then the index; returns the index and the number of files
 * written. */
export async function writeManifestFrom(
  root: string,
  release: string,
  source: ManifestSource,
): Promise<{ index: ManifestIndex; written: number }> {
  // Small shards (~1,000 entries, ~160 KB): an edge instance verifying one file loads one shard.
  const count = shardCountFor(source.files, 1024);
  const listed: ManifestEntry[] = [];
  let shard: ManifestEntry[] = [];
  const next = async () => {
    const body: ManifestShard = { entries: shard.sort(byPath) };
    listed.push(await put(root, treePaths.manifestShard(listed.length), JSON.stringify(body)));
    shard = [];
  };
  for (const [i, entry] of source.byShard(count)) {
    while (listed.length < i) await next();
    shard.push(entry);
  }
  while (listed.length < count) await next();
  const index: ManifestIndex = {
    release,
    api_version: API_VERSION,
    format: MANIFEST_FORMAT,
    files: source.files,
    bytes: source.bytes,
    shards: listed,
  };
  await put(root, treePaths.manifest, JSON.stringify(index));
  return { index, written: listed.length + 1 };
}

/** Writes the manifest of `entries`, held in memory (trees small enough for that). */
export function writeManifest(
  root: string,
  release: string,
  entries: ManifestEntry[],
): Promise<{ index: ManifestIndex; written: number }> {
  return writeManifestFrom(root, release, {
    files: entries.length,
    bytes: entries.reduce((n, e) => n + e.size, 0),
    byShard: (count) =>
      entries.map((e) => [shardOf(e.path, count), e] as [number, ManifestEntry]).sort(([a], [b]) => a - b),
  });
}
