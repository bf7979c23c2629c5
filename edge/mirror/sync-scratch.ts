// A sync's scratch tables, on disk (files in a hidden directory of the mirror, removed when the sync
// ends): what the held releases list, where each packed object lies, what is missing. They hold one
// record per object, so a release ten times human scale costs the sync disk, not memory: the sync
// reads them back in bounded pages, in the order each step needs (by sha256 to check what is held, by
// pack and offset to read ranges). Plain files sorted in runs and merged (record-runs.ts), not a
// database: the one-file server carries them with no native module.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../build/common/live-process.js';
import { BadInputError } from '../../build/common/errors.js';
import {
  LogTable,
  MAX_RECORD_BYTES,
  SortedTable,
  pages,
  writeSha,
  type RecordView,
} from '../../build/common/record-runs.js';

/** Rows read back at once. */
export const PAGE = 4096;
const SCRATCH_DIR = /^\.sync-scratch-([0-9]+)-[0-9a-f]+$/;

export interface Wanted {
  sha256: string;
  size: number;
  path: string;
}

/** A missing object with its place in a pack. */
export interface MissingPacked extends Wanted {
  pack: number;
  offset: number;
  length: number;
}

/** A place in a pack. */
interface At {
  pack: number;
  offset: number;
  length: number;
}

// Records, big-endian, sorted tables by their first bytes (a sha256 raw, or a pack and an offset):
//   wanted   sha256 32 | size 6 | path
//   packed   sha256 32 | pack 4 | offset 6 | length 6
//   missing  pack 4 | offset 6 | sha256 32 | size 6 | length 6 | path
//   alone    sha256 32 | size 6 | path
const SHA = 32;
const INT = 6;
const PACK = 4;
/** The bytes of a record before its path, at most. */
const FIXED = PACK + INT + SHA + INT + INT;
const MAX_PATH_BYTES = MAX_RECORD_BYTES - FIXED;

export class SyncScratch {
  /** Packs by number (the tables name a pack by its place here): a few thousand at most. */
  readonly packs: string[] = [];
  private readonly packNumbers = new Map<string, number>();
  private readonly wantedTable: SortedTable;
  private readonly packedTable: SortedTable;
  private readonly missingTable: SortedTable;
  private readonly aloneTable: LogTable;
  /** Where a record is encoded before it is added. */
  private readonly record = Buffer.alloc(MAX_RECORD_BYTES);
  private readonly key = Buffer.alloc(SHA);

  private constructor(
    readonly dir: string,
    batchBytes?: number,
  ) {
    this.wantedTable = new SortedTable(dir, 'wanted', { keyBytes: SHA, unique: true, batchBytes });
    this.packedTable = new SortedTable(dir, 'packed', { keyBytes: SHA, unique: true, batchBytes });
    this.missingTable = new SortedTable(dir, 'missing', { keyBytes: PACK + INT, unique: false, batchBytes });
    this.aloneTable = new LogTable(dir, 'alone', batchBytes);
  }

  /** A new scratch directory in the mirror at `root` (hidden: a mirror's check of its directory
   * skips dot names); those of syncs whose process is gone are removed first. `batchBytes`: what
   * each table holds in memory before writing a run (tests make it small). */
  static open(root: string, o: { batchBytes?: number } = {}): SyncScratch {
    for (const name of safeList(root)) {
      const m = SCRATCH_DIR.exec(name);
      if (m && !processAlive(Number(m[1]))) rmSync(join(root, name), { recursive: true, force: true });
    }
    const dir = join(root, `.sync-scratch-${process.pid}-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir, { recursive: true });
    return new SyncScratch(dir, o.batchBytes);
  }

  close(): void {
    try {
      for (const t of [this.wantedTable, this.packedTable, this.missingTable, this.aloneTable]) t.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  /** The number of a pack, given on first sight. */
  packNumber(sha: string): number {
    let n = this.packNumbers.get(sha);
    if (n === undefined) {
      n = this.packs.length;
      this.packs.push(sha);
      this.packNumbers.set(sha, n);
    }
    return n;
  }

  addWanted(sha: string, size: number, path: string): void {
    this.wantedTable.add(this.listing(sha, size, path));
  }

  /** An object's place in a pack; of two places, the first given is used. */
  addPacked(sha: string, pack: number, offset: number, length: number): void {
    const r = this.record;
    writeSha(r, 0, sha);
    r.writeUInt32BE(pack, SHA);
    r.writeUIntBE(offset, SHA + PACK, INT);
    r.writeUIntBE(length, SHA + PACK + INT, INT);
    this.packedTable.add(r.subarray(0, SHA + PACK + 2 * INT));
  }

  addMissing(o: Wanted, at: At | null): void {
    if (!at) {
      this.addAlone(o);
      return;
    }
    const r = this.record;
    r.writeUInt32BE(at.pack, 0);
    r.writeUIntBE(at.offset, PACK, INT);
    writeSha(r, PACK + INT, o.sha256);
    r.writeUIntBE(o.size, PACK + INT + SHA, INT);
    r.writeUIntBE(at.length, PACK + 2 * INT + SHA, INT);
    this.missingTable.add(r.subarray(0, FIXED + putPath(r, FIXED, o.path)));
  }

  /** A missing object read on its own (in no pack, or refused from one). */
  addAlone(o: Wanted): void {
    this.aloneTable.add(this.listing(o.sha256, o.size, o.path));
  }

  /** Where an object lies in a pack, or null. Lookups in ascending sha256 order (as the sync checks
   * what it holds) read each block of the table once. */
  where(sha: string): At | null {
    writeSha(this.key, 0, sha);
    const r = this.packedTable.find(this.key);
    if (!r) return null;
    const at = r.at + SHA;
    return {
      pack: r.buf.readUInt32BE(at),
      offset: r.buf.readUIntBE(at + PACK, INT),
      length: r.buf.readUIntBE(at + PACK + INT, INT),
    };
  }

  /** The number of distinct wanted objects; once every wanted object is added. */
  wantedCount(): number {
    return this.wantedTable.compact();
  }

  /** Wanted objects in sha256 order, each once (the first listing of it), a page at a time. */
  *wanted(): Generator<Wanted[]> {
    this.wantedTable.compact();
    yield* pages(this.wantedTable.records(), PAGE, readListing);
  }

  /** Counts of missing objects: in packs, and to be read alone. */
  missingCounts(): { packed: number; alone: number } {
    return { packed: this.missingTable.size, alone: this.aloneTable.size };
  }

  /** Missing packed objects by pack and offset (of equal places, in the order added), a page at a time. */
  *missingPacked(): Generator<MissingPacked[]> {
    yield* pages(this.missingTable.records(), PAGE, (r) => {
      const b = r.buf;
      const at = r.at;
      return {
        pack: b.readUInt32BE(at),
        offset: b.readUIntBE(at + PACK, INT),
        sha256: b.toString('hex', at + PACK + INT, at + PACK + INT + SHA),
        size: b.readUIntBE(at + PACK + INT + SHA, INT),
        length: b.readUIntBE(at + PACK + 2 * INT + SHA, INT),
        path: b.toString('utf8', at + FIXED, at + r.length),
      };
    });
  }

  /** Missing objects read alone, a page at a time (what is added meanwhile comes in later pages). */
  *alone(): Generator<Wanted[]> {
    yield* pages(this.aloneTable.records(), PAGE, readListing);
  }

  /** A wanted or alone record in `record`. */
  private listing(sha: string, size: number, path: string): Buffer {
    const r = this.record;
    writeSha(r, 0, sha);
    r.writeUIntBE(size, SHA, INT);
    return r.subarray(0, SHA + INT + putPath(r, SHA + INT, path));
  }
}

const readListing = (r: RecordView): Wanted => ({
  sha256: r.buf.toString('hex', r.at, r.at + SHA),
  size: r.buf.readUIntBE(r.at + SHA, INT),
  path: r.buf.toString('utf8', r.at + SHA + INT, r.at + r.length),
});

/** Writes a path at `at`; answers its bytes. */
function putPath(buf: Buffer, at: number, path: string): number {
  const n = Buffer.byteLength(path);
  if (n > MAX_PATH_BYTES)
    throw new BadInputError(
      `${path.slice(0, 80)}…: a path of ${n} bytes in a manifest; a sync holds paths of at most ${MAX_PATH_BYTES} bytes`,
    );
  return buf.write(path, at);
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
