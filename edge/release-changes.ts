// What changed between two releases, gene by gene and isoform by isoform, from their manifests alone:
// a shard of the manifest is a file list named by its sha256, so two releases whose manifest.json
// list the same sha256 for a shard hold the same files there, and only the shards listed differently
// are read and compared, path by path. What that costs grows with the change, not the release (a
// publish lists an unchanged shard again: build/publish/manifest-encoding.ts); releases whose
// manifests have different shard counts are compared whole, a group of shards at a time. Every file of a gene or an isoform is
// named by its canonical id (edge/contract/tree.ts), so a differing file names the record it belongs to.
import { routesOfTreeFile, treePaths, type ManifestEntry } from './contract/tree.js';
import { isKeyedFile, type Route } from './contract/routes.js';
import type { ChangedRecordBody } from './contract/schemas.js';
import type { VerifiedOrigin } from './origins/verified.js';

export type RecordType = ChangedRecordBody['type'];
export type RecordPart = ChangedRecordBody['parts'][number];

/** One gene or isoform whose files differ between two releases. */
export interface RecordChange {
  type: RecordType;
  id: string;
  change: ChangedRecordBody['change'];
  /** Which of its resources differ, in the order of RECORD_PARTS. */
  parts: RecordPart[];
}

/** The order parts are listed in: the record, then what is below it, as the route table orders them. */
const RECORD_PARTS: readonly RecordPart[] = ['record', 'isoforms', 'domains', 'neoantigens', 'ptm', 'structure'];

/** Shards read at once from each release: enough to keep a remote store busy, few enough for an edge
 * instance's memory. */
const SHARDS_IN_FLIGHT = 8;

/** The record a file of the tree belongs to, and which part of it the file is; null for a file of no
 * gene or isoform (release metadata, edge data, the docs). A route whose path is the record's is the
 * record; one below it is named by its last segment, as the record's links name it. */
export function recordOf(path: string): { type: RecordType; id: string; part: RecordPart } | null {
  const structure = /^structures\/(.+)\.cif$/.exec(path);
  if (structure && treePaths.structureFile(structure[1]) === path)
    return { type: 'isoform', id: structure[1], part: 'structure' };
  for (const { route, id } of routesOfTreeFile(path)) {
    if (id === undefined || !isKeyedFile(route)) continue;
    return { type: route.file.per, id, part: partOf(route) };
  }
  return null;
}

function partOf(route: Route): RecordPart {
  const segments = route.path.split('/');
  const last = segments[segments.length - 1];
  return (last.startsWith('{') ? 'record' : last) as RecordPart;
}

/** The file that is a record itself: whether it is in a release says whether the record is. */
export const recordPath = (type: RecordType, id: string) =>
  type === 'gene' ? treePaths.gene(id) : treePaths.isoform(id);

/** Every gene and isoform whose files differ from `before` to `after`: genes first, then isoforms,
 * each by id. A record in both is `changed` only when the bytes of one of its files differ. */
export async function changesBetween(before: VerifiedOrigin, after: VerifiedOrigin): Promise<RecordChange[]> {
  const touched = new Map<string, { type: RecordType; id: string; parts: Set<RecordPart>; record?: Differing }>();
  for (const differing of await differingPaths(before, after)) {
    const record = recordOf(differing.path);
    if (!record) continue;
    const key = `${record.type}\u0000${record.id}`;
    let entry = touched.get(key);
    if (!entry) touched.set(key, (entry = { type: record.type, id: record.id, parts: new Set() }));
    entry.parts.add(record.part);
    if (record.part === 'record') entry.record = differing;
  }
  const changes: RecordChange[] = [];
  await inBatches([...touched.values()], async ({ type, id, parts, record }) => {
    // A record file that differs says itself which release has it; one that does not is the same in
    // both, so one release says whether both have it.
    const both = record ? null : (await after.entry(recordPath(type, id))) !== null;
    const was = record ? record.was : both;
    const is = record ? record.is : both;
    // Files of a record that neither release holds (none a rendered tree has) name no change.
    if (!was && !is) return;
    const change = was && is ? 'changed' : is ? 'added' : 'removed';
    changes.push({ type, id, change, parts: RECORD_PARTS.filter((p) => parts.has(p)) });
  });
  return changes.sort((a, b) =>
    a.type !== b.type ? (a.type === 'gene' ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
}

/** A path whose entry differs between two releases, and which of them lists it. */
interface Differing {
  path: string;
  was: boolean;
  is: boolean;
}

/** The paths whose entries differ (added, removed, or another sha256 or size). */
async function differingPaths(before: VerifiedOrigin, after: VerifiedOrigin): Promise<Differing[]> {
  const [was, is] = await Promise.all([before.shardHeads(), after.shardHeads()]);
  const paths: Differing[] = [];
  if (was.length === is.length) {
    const differing = [...is.keys()].filter((n) => was[n].sha256 !== is[n].sha256);
    await inBatches(differing, async (n) => {
      const [a, b] = await Promise.all([before.shardFiles(n), after.shardFiles(n)]);
      diffSorted(a, b, paths);
    });
    return paths;
  }
  // Other shard counts (a release that grew past a power of two): every shard is compared, a group at
  // a time. Counts are powers of two and a path's shard the low bits of its hash, so shard m of the
  // smaller count holds exactly the paths of the larger count's shards n with n mod count = m.
  const count = Math.min(was.length, is.length);
  const group = async (origin: VerifiedOrigin, shards: number, m: number) => {
    const members = [...Array(shards / count).keys()].map((k) => m + k * count);
    const files = (await Promise.all(members.map((n) => origin.shardFiles(n)))).flat();
    return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  };
  await inBatches([...Array(count).keys()], async (m) => {
    const [a, b] = await Promise.all([group(before, was.length, m), group(after, is.length, m)]);
    diffSorted(a, b, paths);
  });
  return paths;
}

/** Adds to `out` the paths of two entry lists (each sorted by path) that are not the same in both. */
function diffSorted(a: ManifestEntry[], b: ManifestEntry[], out: Differing[]): void {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = a[i];
    const y = b[j];
    if (y === undefined || (x !== undefined && x.path < y.path)) {
      out.push({ path: x.path, was: true, is: false });
      i++;
    } else if (x === undefined || y.path < x.path) {
      out.push({ path: y.path, was: false, is: true });
      j++;
    } else {
      if (x.sha256 !== y.sha256 || x.size !== y.size) out.push({ path: x.path, was: true, is: true });
      i++;
      j++;
    }
  }
}

/** `work` for every item, SHARDS_IN_FLIGHT at a time. */
async function inBatches<T>(items: T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(SHARDS_IN_FLIGHT, items.length) }, worker));
}
