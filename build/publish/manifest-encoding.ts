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
// A shard at a time (publish holds no whole manifest): planShard compares one shard of the tree with
// the current release's, rebasedShards chooses from what the plans say, and encodeShard lists each.
import { createHash } from 'node:crypto';
import { MAX_CHAIN, type ShardRef } from '../../edge/contract/manifest.js';
import type { ManifestEntry, ManifestIndex } from '../../edge/contract/tree.js';
import type { LoadedShard } from '../common/manifest-reader.js';
import type { ShardPlan } from './publish-ledger.js';

const sha256Of = (body: Buffer) => createHash('sha256').update(body).digest('hex');

const sameEntry = (a: ManifestEntry, b: ManifestEntry) =>
  a.path === b.path && a.size === b.size && a.sha256 === b.sha256 && a.content_type === b.content_type;

/** What differs between two shards' entries (both sorted by path): entries added or changed in
 * `next`, and paths it no longer lists. */
function diff(
  prev: readonly ManifestEntry[],
  next: readonly ManifestEntry[],
): { entries: ManifestEntry[]; removed: string[] } {
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

/** Shard `shard` of the current release (`before`) against the tree's (`entries`, sorted by path):
 * whether it changed, and if so the delta on its chain that says how, with the delta's bytes. */
export function planShard(
  shard: number,
  before: LoadedShard,
  entries: readonly ManifestEntry[],
): { plan: ShardPlan; deltaBody: Buffer | null } {
  const change = diff(before.entries, entries);
  const changed = change.entries.length > 0 || change.removed.length > 0;
  let deltaBody: Buffer | null = null;
  if (changed) {
    const bases: ShardRef[] = [{ sha256: before.head.sha256, size: before.head.size }, ...before.bases];
    deltaBody = Buffer.from(JSON.stringify({ entries: change.entries, removed: change.removed, bases }), 'utf8');
  }
  return {
    plan: {
      shard,
      head: before.head,
      bases: before.bases,
      changed,
      delta: deltaBody ? { sha256: sha256Of(deltaBody), size: deltaBody.length } : null,
    },
    deltaBody,
  };
}

/** The changed shards written full: those whose chain would grow past the bound, and of those with
 * a chain the deepest (ties by shard number), up to REBASES_PER_PUBLISH of the `count` shards. */
export function rebasedShards(changed: readonly { shard: number; depth: number }[], count: number): Set<number> {
  const deepest = changed
    .filter((c) => c.depth > 0)
    .sort((a, b) => b.depth - a.depth || a.shard - b.shard)
    .map((c) => c.shard);
  const rebased = new Set(deepest.slice(0, Math.ceil(count / MAX_CHAIN)));
  for (const c of changed) if (c.depth + 1 > MAX_CHAIN) rebased.add(c.shard);
  return rebased;
}

/** How the published manifest lists one shard: its head, and every shard object it names (head
 * first, then its chain). `treeHead`: the tree's shard object; `plan`: the current release's shard
 * against it (null without a usable current release); `stored`: the store holds the tree's object. */
export function encodeShard(
  treeHead: ManifestEntry,
  plan: ShardPlan | null,
  rebased: boolean,
  stored: boolean,
): { head: ManifestEntry; objects: ManifestEntry[] } {
  const chain = (like: ManifestEntry, bases: ShardRef[]) =>
    bases.map((b): ManifestEntry => ({ ...like, sha256: b.sha256, size: b.size }));
  // Unchanged content: the current release's shard object, listed again.
  if (plan && !plan.changed) return { head: plan.head, objects: [plan.head, ...chain(plan.head, plan.bases)] };
  // The change reverts to a full shard object the store holds.
  if (stored) return { head: treeHead, objects: [treeHead] };
  if (plan?.delta && !rebased) {
    const head = { ...treeHead, sha256: plan.delta.sha256, size: plan.delta.size };
    const bases: ShardRef[] = [{ sha256: plan.head.sha256, size: plan.head.size }, ...plan.bases];
    return { head, objects: [head, ...chain(treeHead, bases)] };
  }
  // Full: the tree's own shard object, which a rendered tree always has.
  return { head: treeHead, objects: [treeHead] };
}
