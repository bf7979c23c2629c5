// Reads a rendered tree's sharded tables whole, for tests that check them against each other.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeManifest } from '../../build/render/manifest.js';
import { shardOf } from '../../edge/contract/shards.js';
import {
  contentTypeOf,
  treePaths,
  type EdgeIndex,
  type ManifestEntry,
  type ManifestIndex,
  type ManifestShard,
  type StructureMapEntry,
} from '../../edge/contract/tree.js';

const json = <T>(root: string, path: string): T => JSON.parse(readFileSync(join(root, path), 'utf8')) as T;

/** The release a tree holds, as its manifest names it. */
export function releaseOf(root: string): string {
  return json<ManifestIndex>(root, treePaths.manifest).release;
}

/** `text` as a regular expression source that matches it literally. */
export const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function edgeIndex(root: string): EdgeIndex {
  return json<EdgeIndex>(root, treePaths.edgeIndex);
}

function merged<T>(root: string, shards: number, pathOf: (shard: number) => string): Record<string, T> {
  const out: Record<string, T> = {};
  for (let i = 0; i < shards; i++) Object.assign(out, json<Record<string, T>>(root, pathOf(i)));
  return out;
}

/** Both alias maps, every shard merged: lower-cased key → canonical id(s). */
export function readAliases(root: string): {
  genes: Record<string, string | string[]>;
  isoforms: Record<string, string>;
} {
  const index = edgeIndex(root);
  return {
    genes: merged<string | string[]>(root, index.gene_aliases.shards, treePaths.geneAliases),
    isoforms: merged<string>(root, index.isoform_aliases.shards, treePaths.isoformAliases),
  };
}

export function readStructureMap(root: string): Record<string, StructureMapEntry> {
  return merged<StructureMapEntry>(root, edgeIndex(root).structures.shards, treePaths.structureMap);
}

export function readManifest(root: string): { index: ManifestIndex; entries: ManifestEntry[] } {
  const index = json<ManifestIndex>(root, treePaths.manifest);
  const entries = index.shards.flatMap((s) => json<ManifestShard>(root, s.path).entries);
  return { index, entries: entries.sort((a, b) => (a.path < b.path ? -1 : 1)) };
}

/** Replaces (or, with null, deletes) files of a tree and rewrites its manifest (and the edge index's
 * hashes of changed edge shards) to match, as a rebuild would. Files are unlinked before writing, so
 * a hard-linked copy never writes through. */
export async function rewriteTree(
  root: string,
  changes: Record<string, string | Buffer | null>,
  release?: string,
): Promise<void> {
  const edge = edgeIndex(root);
  const shardChanges = Object.entries(changes).filter(([path]) => path in edge.sha256);
  if (shardChanges.length > 0 && !(treePaths.edgeIndex in changes)) {
    for (const [path, content] of shardChanges) {
      if (content === null) delete edge.sha256[path];
      else edge.sha256[path] = createHash('sha256').update(content).digest('hex');
    }
    changes = { ...changes, [treePaths.edgeIndex]: JSON.stringify(edge) };
  }
  const { index, entries } = readManifest(root);
  const byPath = new Map(entries.map((e) => [e.path, e]));
  for (const [path, content] of Object.entries(changes)) {
    rmSync(join(root, path), { force: true });
    if (content === null) {
      byPath.delete(path);
      continue;
    }
    const data = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), data);
    byPath.set(path, {
      path,
      size: data.length,
      sha256: createHash('sha256').update(data).digest('hex'),
      content_type: contentTypeOf(path),
    });
  }
  rmSync(join(root, 'manifest'), { recursive: true, force: true });
  rmSync(join(root, treePaths.manifest), { force: true });
  await writeManifest(root, release ?? index.release, [...byPath.values()]);
}

/** The path and new body of the alias shard holding `key`, with `key` set to `value`. */
export function withAlias(root: string, table: 'genes' | 'isoforms', key: string, value: string): [string, string] {
  const index = edgeIndex(root);
  const path =
    table === 'genes'
      ? treePaths.geneAliases(shardOf(key, index.gene_aliases.shards))
      : treePaths.isoformAliases(shardOf(key, index.isoform_aliases.shards));
  return [path, JSON.stringify({ ...json<Record<string, unknown>>(root, path), [key]: value })];
}
