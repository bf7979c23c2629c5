// The manifest as publish writes it: each shard of the rendered tree encoded against the same shard of
// the store's current release, so a publish writes manifest bytes in proportion to the change
// (docs/ARCHITECTURE.md, "Manifests that grow with the change"; the delta format is in
// edge/contract/manifest.ts):
//   - unchanged content: the current release's shard object is listed again, nothing is written;
//   - changed: a delta holding only what differs from the current release's shard, on that shard's
//     object and its chain of bases;
//   - written full instead: a shard whose chain would grow beyond MAX_CHAIN, and, of the changed
//     shards with a chain, the ones with the deepest chains (ties by shard number), up to
//     REBASES_PER_PUBLISH of the shard count: under a change spread over all shards the depths
//     stagger, so every publish rewrites about the same small part, never all shards at once;
//   - a changed shard whose content is a full shard object the store holds already (a kept release
//     lists it: the change reverts to it) lists that object, writing nothing;
//   - all full when there is no current release or its shard count differs.
// The published manifest.json is the tree's with its shards' entries naming these objects (its other
// members carried as they are), so it differs from the tree's own manifest.json.
import { createHash } from 'node:crypto';
import { MAX_CHAIN, type ShardRef } from '../../edge/contract/manifest.js';
import type { ManifestEntry, ManifestIndex } from '../../edge/contract/tree.js';
import type { LoadedManifest, LoadedShard } from '../common/manifest-reader.js';

export interface EncodedManifest {
  index: ManifestIndex;
  /** manifest.json as published, and its sha256. */
  indexBody: Buffer;
  sha256: string;
  /** Every shard object the published manifest references (heads and their bases), once each, with
   * its bytes (those of the tree, of the current release's manifest, or written by the encoding). */
  objects: { entry: ManifestEntry; body?: Buffer }[];
  /** How each shard was written. */
  shards: { full: number; delta: number; reused: number };
}

const sha256Of = (body: Buffer) => createHash('sha256').update(body).digest('hex');

const sameEntry = (a: ManifestEntry, b: ManifestEntry) =>
  a.path === b.path && a.size === b.size && a.sha256 === b.sha256 && a.content_type === b.content_type;

/** What differs between two shards' entries (both sorted by path): entries added or changed in
 * `next`, and paths it no longer lists. */
function diff(prev: ManifestEntry[], next: ManifestEntry[]): { entries: ManifestEntry[]; removed: string[] } {
  const entries: ManifestEntry[] = [];
  const removed: string[] = [];
  let i = 0;
  let j = 0;
  while (i < prev.length || j < next.length) {
    const a = prev[i];
    const b = next[j];
    if (b === undefined || (a !== undefined && a.path < b.path)) {
      removed.push(a.path);
      i++;
    } else if (a === undefined || b.path < a.path) {
      entries.push(b);
      j++;
    } else {
      if (!sameEntry(a, b)) entries.push(b);
      i++;
      j++;
    }
  }
  return { entries, removed };
}

/** The published manifest.json of an index. */
export const manifestBody = (index: ManifestIndex): Buffer => Buffer.from(JSON.stringify(index), 'utf8');

/** Encodes the tree's manifest against `previous`, the store's current release's manifest (null when
 * there is none, or it cannot be used); `stored` tells which objects the store holds for sure. */
export function encodeManifest(
  tree: LoadedManifest,
  previous: LoadedManifest | null,
  stored: (sha256: string) => boolean = () => false,
): EncodedManifest {
  const count = tree.index.shards.length;
  // Bytes of every shard object at hand, so any of them can be uploaded again if gc took it meanwhile.
  const bodies = new Map([...(previous?.shards ?? []), ...tree.shards].map((s) => [s.entry.sha256, s.body]));
  const prev = previous && previous.index.shards.length === count ? previous.byShard : null;
  const counts = { full: 0, delta: 0, reused: 0 };

  // Changed shards, and which of them are written full: those past the chain bound, and the deepest.
  const changes = new Map<number, { entries: ManifestEntry[]; removed: string[] }>();
  if (prev)
    tree.byShard.forEach((shard, i) => {
      const d = diff(prev[i].entries, shard.entries);
      if (d.entries.length || d.removed.length) changes.set(i, d);
    });
  const deepest = [...changes.keys()]
    .filter((i) => prev![i].bases.length > 0)
    .sort((a, b) => prev![b].bases.length - prev![a].bases.length || a - b);
  const rebased = new Set(deepest.slice(0, Math.ceil(count / MAX_CHAIN)));
  for (const i of changes.keys()) if (prev![i].bases.length + 1 > MAX_CHAIN) rebased.add(i);

  const objects = new Map<string, { entry: ManifestEntry; body?: Buffer }>();
  const add = (entry: ManifestEntry, body = bodies.get(entry.sha256)) => {
    if (!objects.has(entry.sha256)) objects.set(entry.sha256, { entry, body });
  };
  const listed = (shard: LoadedShard, bases: ShardRef[]) =>
    bases.forEach((b) => add({ ...shard.head, sha256: b.sha256, size: b.size }));
  const heads = tree.byShard.map((shard, i): ManifestEntry => {
    const before = prev?.[i];
    const change = changes.get(i);
    if (before && !change) {
      counts.reused++;
      add(before.head);
      listed(before, before.bases);
      return before.head;
    }
    if (stored(shard.head.sha256)) {
      counts.reused++;
      add(shard.head);
      return shard.head;
    }
    if (before && change && !rebased.has(i)) {
      counts.delta++;
      const bases: ShardRef[] = [{ sha256: before.head.sha256, size: before.head.size }, ...before.bases];
      const body = Buffer.from(JSON.stringify({ entries: change.entries, removed: change.removed, bases }), 'utf8');
      const head = { ...shard.head, sha256: sha256Of(body), size: body.length };
      add(head, body);
      listed(shard, bases);
      return head;
    }
    // Full: the tree's own shard object, which a rendered tree always has.
    counts.full++;
    add(shard.head);
    return shard.head;
  });
  const index: ManifestIndex = { ...tree.index, shards: heads };
  const indexBody = manifestBody(index);
  return { index, indexBody, sha256: sha256Of(indexBody), objects: [...objects.values()], shards: counts };
}
