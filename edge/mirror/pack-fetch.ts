// A mirror's objects read from the source's packs (edge/contract/packs.ts): a few large range reads
// instead of one request per object. The release's pack list and the pack indexes are ordinary
// objects, kept in the mirror like any other (a re-sync reads them from disk); the wanted objects are
// grouped by pack, sorted by offset and read in ranges that join neighbours, and each object cut from
// a range is checked (length and sha256, against the index) before it is written. Objects already held
// are not wanted, so a sync that stopped part-way starts inside a pack where the last one stopped.
// An object in no pack, or one whose bytes in the pack are wrong, is left to be read on its own.
// Where each object lies is kept in the sync's scratch tables, and the ranges of a large sync are
// planned as its missing objects are read back from them in pack order, so neither grows memory.
import { createHash } from 'node:crypto';
import { packKey, parsePackIndex, parsePackList, type PackRef } from '../contract/packs.js';
import { forEachLimited } from '../../build/common/concurrency.js';
import type { SyncScratch } from './sync-scratch.js';

/** Two wanted objects of a pack are read in one range when at most this many unwanted bytes lie
 * between them: reading them costs less than another request would (a round trip, and one of the few
 * a rate-limited source allows a minute), whereas a larger gap, read for nothing, would cost more. */
export const MAX_GAP_BYTES = 256 * 1024;
/** A range is closed at this many bytes: what one read holds in memory, and what a sync cut off
 * mid-range reads again. A larger object is a range alone. */
export const MAX_RANGE_BYTES = 8 * 1024 * 1024;
/** Ranges in flight at once: enough to keep a link busy, few enough to bound memory. */
const RANGES_IN_FLIGHT = 4;

/** A range of one pack and the wanted objects it holds. */
export interface PackRange {
  pack: string;
  start: number;
  /** Inclusive, as in an HTTP Range. */
  end: number;
  objects: { sha256: string; offset: number; length: number }[];
}

/** Where each object of the releases' packs lies: in the sync's scratch tables (sync-scratch.ts),
 * so that a release of millions of objects costs disk, not memory. */
export class PackedObjects {
  /** The pack lists' and the indexes' sha256 and size: objects of the mirror like any other. */
  readonly metadata = new Map<string, number>();
  /** Packs whose index the mirror held already, read only when an object is found in no other:
   * their objects were fetched by an earlier sync, unless it stopped part-way. */
  private deferred: PackRef[] = [];
  private object: ((sha256: string, size: number, what: string) => Promise<Buffer>) | null = null;
  constructor(private readonly scratch: SyncScratch) {}

  /** Reads the pack list `list` names, then each index it names, through `object` (the mirror's copy
   * when it holds one, else the source's, checked against its sha256 and kept); an index the mirror
   * `held` already is read later, if an object is found in no other pack. A list or index that is not
   * what it claims to be throws, naming it. */
  async add(
    list: { sha256: string; size: number },
    object: (sha256: string, size: number, what: string) => Promise<Buffer>,
    held: (sha256: string, size: number) => boolean = () => false,
  ): Promise<void> {
    this.object = object;
    const what = `pack list ${list.sha256}`;
    const packs = parsePackList(await object(list.sha256, list.size, what), what);
    this.metadata.set(list.sha256, list.size);
    for (const ref of packs.packs) {
      if (this.metadata.has(ref.index.sha256)) continue;
      this.metadata.set(ref.index.sha256, ref.index.size);
      if (held(ref.index.sha256, ref.index.size)) this.deferred.push(ref);
      else await this.read(ref);
    }
  }

  private async read(ref: PackRef): Promise<void> {
    const where = `index of pack ${ref.sha256}`;
    const index = parsePackIndex(await this.object!(ref.index.sha256, ref.index.size, where), where);
    checkIndex(ref, index.pack, index.objects.length, where);
    const pack = this.scratch.packNumber(ref.sha256);
    for (const [sha, offset, length] of index.objects) this.scratch.addPacked(sha, pack, offset, length);
  }

  /** Where an object lies, when a pack holds it with this size; the deferred indexes are read at the
   * first object the others do not place. */
  async where(sha: string, size: number): Promise<{ pack: number; offset: number; length: number } | null> {
    const at = this.scratch.where(sha);
    if (at && at.length === size) return at;
    if (this.deferred.length === 0) return null;
    const deferred = this.deferred;
    this.deferred = [];
    for (const ref of deferred) await this.read(ref);
    return this.where(sha, size);
  }

  /** The ranges that read `wanted` (sha256 → size; a few, held in memory), and the objects no pack
   * holds with that size. */
  async plan(wanted: Iterable<[string, number]>): Promise<{ ranges: PackRange[]; rest: Map<string, number> }> {
    const found: { sha256: string; pack: number; offset: number; length: number }[] = [];
    const rest = new Map<string, number>();
    for (const [sha, size] of wanted) {
      const at = await this.where(sha, size);
      if (at) found.push({ sha256: sha, ...at });
      else rest.set(sha, size);
    }
    found.sort((a, b) => a.pack - b.pack || a.offset - b.offset);
    const ranges: PackRange[] = [];
    const planner = new RangePlanner((r) => ranges.push(r));
    for (const o of found) planner.add(this.scratch.packs[o.pack], o);
    planner.end();
    return { ranges, rest };
  }
}

/** Joins objects handed to it in pack and offset order into ranges, each handed on once closed. */
export class RangePlanner {
  private range: PackRange | null = null;
  constructor(private readonly closed: (range: PackRange) => void) {}

  add(pack: string, o: { sha256: string; offset: number; length: number }): void {
    const end = o.offset + o.length - 1;
    const range = this.range;
    if (
      range &&
      range.pack === pack &&
      o.offset - (range.end + 1) <= MAX_GAP_BYTES &&
      end - range.start + 1 <= MAX_RANGE_BYTES
    ) {
      range.end = Math.max(range.end, end);
      range.objects.push({ sha256: o.sha256, offset: o.offset, length: o.length });
      return;
    }
    if (range) this.closed(range);
    this.range = { pack, start: o.offset, end, objects: [{ sha256: o.sha256, offset: o.offset, length: o.length }] };
  }

  end(): void {
    if (this.range) this.closed(this.range);
    this.range = null;
  }
}

function checkIndex(ref: PackRef, pack: { sha256: string; size: number }, count: number, where: string): void {
  if (pack.sha256 !== ref.sha256 || pack.size !== ref.size || count !== ref.objects)
    throw new Error(
      `${where}: it describes pack ${pack.sha256} of ${pack.size} bytes and ${count} objects, but the pack list names pack ${ref.sha256} of ${ref.size} bytes and ${ref.objects} objects`,
    );
}

export interface PackFetchResult {
  /** Packs read from, and ranges read. */
  packs: number;
  ranges: number;
  /** Objects not written, left to be read on their own (each said through `refused`): their bytes in
   * the pack did not match their index, or the source does not have their pack (a server of an
   * older version). */
  refused: Map<string, number>;
}

/** Reads `ranges` (at most a few at once), cuts each object out, checks it and hands it to `put`.
 * `read` answers bytes start..end of a pack key exactly, null when the source has no such pack, or throws. */
export async function fetchRanges(
  ranges: PackRange[],
  io: {
    read(key: string, start: number, end: number): Promise<Buffer | null>;
    put(sha256: string, body: Buffer): Promise<void>;
    refused(line: string): void;
  },
): Promise<PackFetchResult> {
  const refused = new Map<string, number>();
  const missing = new Set<string>();
  /** Packs the source answered a range of: it serves packs, so a later refusal is about a range. */
  const answered = new Set<string>();
  let read = 0;
  const fetchRange = async (range: PackRange): Promise<void> => {
    const key = packKey(range.pack);
    read++;
    const body = missing.has(range.pack) ? null : await io.read(key, range.start, range.end);
    if (!body) {
      const runs = exactRuns(range);
      // A joined range also covers objects between the wanted ones, which a mirror serving the pack
      // may not hold (it keeps only its releases' objects): ask for the wanted runs alone.
      if (runs.length > 1 && !missing.has(range.pack)) {
        for (const run of runs) await fetchRange(run);
        return;
      }
      if (!answered.has(range.pack) && !missing.has(range.pack)) {
        io.refused(`${key} is not at the source, though its pack list names it: its objects are read one by one`);
        missing.add(range.pack);
      }
      for (const o of range.objects) refused.set(o.sha256, o.length);
      return;
    }
    answered.add(range.pack);
    for (const o of range.objects) {
      const bytes = body.subarray(o.offset - range.start, o.offset - range.start + o.length);
      const actual = createHash('sha256').update(bytes).digest('hex');
      if (bytes.length !== o.length || actual !== o.sha256) {
        refused.set(o.sha256, o.length);
        io.refused(
          `${key} bytes ${o.offset}-${o.offset + o.length - 1}: hash to ${actual}, not to the sha256 ${o.sha256} its index lists; not written, read on its own`,
        );
        continue;
      }
      await io.put(o.sha256, bytes);
    }
  };
  await forEachLimited(ranges, RANGES_IN_FLIGHT, fetchRange);
  return { packs: new Set(ranges.map((r) => r.pack)).size, ranges: read, refused };
}

/** A range split where its objects are not adjacent: each run holds only wanted objects. */
function exactRuns(range: PackRange): PackRange[] {
  const runs: PackRange[] = [];
  for (const o of range.objects) {
    const last = runs.at(-1);
    if (last && last.end + 1 === o.offset) {
      last.end = o.offset + o.length - 1;
      last.objects.push(o);
    } else runs.push({ pack: range.pack, start: o.offset, end: o.offset + o.length - 1, objects: [o] });
  }
  return runs;
}
