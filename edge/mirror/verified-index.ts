// The mirror's record of the objects it has verified (`verified-objects.idx`, beside `objects/` at
// the mirror's root, so gc never lists it): a re-sync trusts an object whose file has not changed
// since it hashed it, deciding so from one stat, and hashes only what is new or changed. Hashing
// every held object at each sync would read the whole mirror (gigabytes at human scale) to learn
// that a few files changed.
//
// What "unchanged" means: the same size, modification time, change time and inode as when the
// object was hashed (as Node's stat gives them: milliseconds with their fraction, compared exactly). A file replaced (rename, copy), rewritten or
// truncated in place changes its inode or its change time, which no user can set back (utimes
// itself sets it), so only damage below the file system (a bad disk) goes unseen: `isoatlas serve`
// refuses such an object and notes it (refused-record.ts), the next sync hashes it again, and
// `isoatlas mirror --verify` hashes everything.
//
// Format (big-endian), sorted so that it is searched in place and merged as a stream:
//   magic  "IAVIDX01"                               8 bytes
//   count  u64                                      8 bytes
//   count records, sorted by sha256, each RECORD bytes:
//     sha256 (raw) 32 | size f64 | mtime ms f64 | ctime ms f64 | inode f64
//   sha256 of everything before it                  32 bytes
// Memory does not grow with the index: the file stays on disk and is searched there (a sparse
// table of every STRIDE-th record's first bytes, then one read of a few records), and the records
// this run adds are kept sorted in bounded chunks, spilled to scratch runs beside the index. The
// new index is a streaming merge of the old file, the runs and the last chunk, written to a scratch
// file and renamed over the old one, so a reader sees either. A missing, truncated or otherwise
// damaged index only means "verify everything" (said once), never a failure.
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  openSync,
  readSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../build/common/live-process.js';
import { MergeHeap } from '../../build/common/merge-heap.js';

export const VERIFIED_INDEX = 'verified-objects.idx';

const MAGIC = Buffer.from('IAVIDX01', 'latin1');
const RECORD = 64;
const HEAD = MAGIC.length + 8;
const TRAILER = 32;
/** One record in this many is in the sparse table: a lookup reads about two such blocks. */
const STRIDE = 32;
/** Records this run adds kept in memory before they are sorted and spilled to a run. */
const CHUNK_RECORDS = 65_536;
/** Records read or written at once when streaming. */
const STREAM_RECORDS = 1024;
/** A scratch run of this run's records: the `.tmp-<pid>-<hex>` ending marks it as scratch. */
const RUN_FILE = new RegExp(`^${VERIFIED_INDEX.replace('.', '\\.')}\\.run[0-9]+\\.tmp-([0-9]+)-[0-9a-f]+$`);

/** What a stat says of an object's file: what a change to it would change. */
export interface Stamp {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

/** The stamp of a regular file, or null when there is none there. */
export function stampOf(file: string): Stamp | null {
  const s = statSync(file, { throwIfNoEntry: false });
  return s?.isFile() ? { size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs, ino: s.ino } : null;
}

/** Whether the stamp at `at` in `buf` is `s`. */
const stampIs = (buf: Buffer, at: number, s: Stamp) =>
  buf.readDoubleBE(at) === s.size &&
  buf.readDoubleBE(at + 8) === s.mtimeMs &&
  buf.readDoubleBE(at + 16) === s.ctimeMs &&
  buf.readDoubleBE(at + 24) === s.ino;

function writeStamp(buf: Buffer, at: number, s: Stamp): void {
  buf.writeDoubleBE(s.size, at);
  buf.writeDoubleBE(s.mtimeMs, at + 8);
  buf.writeDoubleBE(s.ctimeMs, at + 16);
  buf.writeDoubleBE(s.ino, at + 24);
}

/** Sorted records on disk from byte `start`: searched by binary search over reads, or streamed. */
interface RecordFile {
  fd: number;
  start: number;
  count: number;
  /** A scratch run, removed once merged. */
  path?: string;
}

const readAt = (file: RecordFile, buf: Buffer, first: number, n: number) =>
  readSync(file.fd, buf, 0, n * RECORD, file.start + first * RECORD);

export class VerifiedIndex {
  /** The index read at the start (absent when there is none, or with `--verify`). */
  private readonly old: RecordFile | null;
  /** The first four bytes of the sha256 of every STRIDE-th record of `old`. */
  private readonly sparse: Uint32Array;
  /** Records of `old` seen again by this run with the same stamp: kept as they are. */
  private readonly confirmed: Uint8Array;
  /** Objects hashed or written by this run, not yet spilled: where their stamp is in `stamps`. */
  private fresh = new Map<string, number>();
  private stamps = Buffer.alloc(32 * 1024);
  /** Chunks of this run's records spilled to disk, oldest first. */
  private readonly runs: RecordFile[] = [];
  private readonly block = Buffer.alloc(2 * STRIDE * RECORD);

  private constructor(
    private readonly dir: string | null,
    old: RecordFile | null,
  ) {
    this.old = old;
    const count = old?.count ?? 0;
    this.sparse = new Uint32Array(Math.ceil(count / STRIDE));
    this.confirmed = new Uint8Array(count);
    if (old) {
      const head = Buffer.alloc(4);
      for (let k = 0; k < this.sparse.length; k++) {
        readSync(old.fd, head, 0, 4, old.start + k * STRIDE * RECORD);
        this.sparse[k] = head.readUInt32BE(0);
      }
    }
  }

  /** The index of the mirror in `dir`; an empty one (every object is hashed) when there is none or
   * it is damaged, which `say` is told. */
  static read(dir: string, say: (line: string) => void): VerifiedIndex {
    removeDeadRuns(dir);
    const file = join(dir, VERIFIED_INDEX);
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        say(`cannot read ${file} (${(err as NodeJS.ErrnoException).code}): every object the mirror holds is hashed`);
      else say(`no index of verified objects (${VERIFIED_INDEX}) yet: every object the mirror holds is hashed`);
      return new VerifiedIndex(dir, null);
    }
    const count = whole(fd);
    if (count === null) {
      closeSync(fd);
      say(`${file} is damaged: every object the mirror holds is hashed, and the index is written anew`);
      return new VerifiedIndex(dir, null);
    }
    return new VerifiedIndex(dir, { fd, start: HEAD, count });
  }

  /** An index trusting nothing (`--verify`): the one it replaces is rewritten from what is hashed. */
  static empty(dir?: string): VerifiedIndex {
    if (dir) removeDeadRuns(dir);
    return new VerifiedIndex(dir ?? null, null);
  }

  /** Whether an index was read (not missing, damaged, or set aside by `--verify`). */
  get loaded(): boolean {
    return this.old !== null;
  }

  /** Compares every object the index read at the start records with its file, in sha256 order, and
   * trusts those unchanged; stops at the first that is missing or changed and names it (null when all
   * are unchanged). What it trusts counts as `trusts` answering 'first'. */
  confirmAll(stampOfObject: (sha: string) => Stamp | null): { trusted: number; changed: string | null } {
    let trusted = 0;
    const old = this.old;
    if (!old) return { trusted, changed: null };
    const cursor = fileCursor(old, 0);
    while (cursor.next()) {
      const sha = cursor.buf.toString('hex', cursor.at, cursor.at + 32);
      const now = stampOfObject(sha);
      if (now === null || !stampIs(cursor.buf, cursor.at + 32, now)) return { trusted, changed: sha };
      if (!this.confirmed[cursor.index]) {
        this.confirmed[cursor.index] = 1;
        trusted++;
      }
    }
    return { trusted, changed: null };
  }

  /** Whether the object was verified when its file had this stamp: `first` when the index read at
   * the start says so (it stays in the index), `again` when this run said so already, else null. */
  trusts(sha: string, stamp: Stamp): 'first' | 'again' | null {
    const fresh = this.freshStamp(sha);
    if (fresh) return stampIs(fresh.buf, fresh.at, stamp) ? 'again' : null;
    const i = this.find(sha);
    if (i < 0 || !stampIs(this.block, 32, stamp)) return null;
    if (this.confirmed[i]) return 'again';
    this.confirmed[i] = 1;
    return 'first';
  }

  /** Whether this run verified the object (hashed it, wrote it, or trusted it by its stamp). */
  verifiedNow(sha: string): boolean {
    if (this.freshStamp(sha)) return true;
    const i = this.find(sha);
    return i >= 0 && this.confirmed[i] === 1;
  }

  /** The object was hashed (or written) by this run, its file having this stamp. */
  add(sha: string, stamp: Stamp): void {
    let at = this.fresh.get(sha);
    if (at === undefined) {
      at = this.fresh.size * 32;
      if (at + 32 > this.stamps.length) {
        const grown = Buffer.alloc(this.stamps.length * 2);
        this.stamps.copy(grown);
        this.stamps = grown;
      }
      this.fresh.set(sha, at);
    }
    writeStamp(this.stamps, at, stamp);
    if (this.fresh.size >= CHUNK_RECORDS) this.spill();
  }

  /** Writes the index of what this run verified, plus the records of the old one it did not look at
   * whose files are still there unchanged (objects of releases the mirror no longer holds, kept for
   * their grace period, say): what the clean-up deleted drops out (`restat`: every old record is
   * compared with its file again, those this run trusted too). Every source is in sha256 order,
   * so they are merged as streams, not sorted. Atomic (scratch, then rename). Returns the number of
   * records. */
  write(dir: string, stampOfObject: (sha: string) => Stamp | null, o: { restat?: boolean } = {}): number {
    const file = join(dir, VERIFIED_INDEX);
    const scratch = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    const fd = openSync(scratch, 'w+');
    let open = true;
    let n = 0;
    try {
      const out = Buffer.alloc(STREAM_RECORDS * RECORD);
      let filled = 0;
      const flush = () => {
        writeSync(fd, out, 0, filled * RECORD, HEAD + (n - filled) * RECORD);
        filled = 0;
      };
      const put = (record: Buffer, at: number) => {
        record.copy(out, filled * RECORD, at, at + RECORD);
        filled++;
        n++;
        if (filled === STREAM_RECORDS) flush();
      };
      const sources: Cursor[] = [];
      if (this.old) sources.push(fileCursor(this.old, 0));
      this.runs.forEach((run, k) => sources.push(fileCursor(run, k + 1)));
      sources.push(memoryCursor(this.fresh, this.stamps, this.runs.length + 1));
      const stamp = Buffer.alloc(32);
      mergeCursors(sources, (c) => {
        if (c.rank > 0) return put(c.buf, c.at);
        // A record of the old index: kept when this run trusted it, or its file is unchanged; after a
        // clean-up (`restat`), only when its file is still there unchanged.
        let keep = this.confirmed[c.index] === 1 && !o.restat;
        if (!keep) {
          c.buf.copy(stamp, 0, c.at + 32, c.at + RECORD);
          const now = stampOfObject(c.buf.toString('hex', c.at, c.at + 32));
          keep = now !== null && stampIs(stamp, 0, now);
        }
        if (keep) put(c.buf, c.at);
      });
      flush();
      const head = Buffer.alloc(HEAD);
      MAGIC.copy(head);
      head.writeBigUInt64BE(BigInt(n), MAGIC.length);
      writeSync(fd, head, 0, HEAD, 0);
      writeSync(fd, digestOf(fd, HEAD + n * RECORD), 0, TRAILER, HEAD + n * RECORD);
      closeSync(fd);
      open = false;
      renameSync(scratch, file);
    } finally {
      if (open) closeSync(fd);
      rmSync(scratch, { force: true });
      this.close();
    }
    return n;
  }

  /** Lets go of the files it reads and removes its scratch runs (write does this too). */
  close(): void {
    for (const f of [this.old, ...this.runs]) {
      if (!f) continue;
      try {
        closeSync(f.fd);
      } catch {}
      if (f.path) rmSync(f.path, { force: true });
    }
    this.runs.length = 0;
  }

  /** This run's chunk sorted and written to a scratch run beside the index. */
  private spill(): void {
    if (!this.dir) throw new Error('an index without a directory cannot spill its records');
    const path = join(
      this.dir,
      `${VERIFIED_INDEX}.run${this.runs.length}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`,
    );
    const fd = openSync(path, 'w+');
    const out = Buffer.alloc(STREAM_RECORDS * RECORD);
    let filled = 0;
    let written = 0;
    for (const sha of [...this.fresh.keys()].sort()) {
      out.write(sha, filled * RECORD, 32, 'hex');
      const at = this.fresh.get(sha)!;
      this.stamps.copy(out, filled * RECORD + 32, at, at + 32);
      if (++filled === STREAM_RECORDS) {
        writeSync(fd, out, 0, filled * RECORD, written * RECORD);
        written += filled;
        filled = 0;
      }
    }
    writeSync(fd, out, 0, filled * RECORD, written * RECORD);
    written += filled;
    this.runs.push({ fd, start: 0, count: written, path });
    this.fresh = new Map();
  }

  /** Where this run's latest stamp of `sha` is: its chunk, else the newest run holding it. */
  private freshStamp(sha: string): { buf: Buffer; at: number } | null {
    const at = this.fresh.get(sha);
    if (at !== undefined) return { buf: this.stamps, at };
    if (!/^[0-9a-f]{64}$/.test(sha)) return null;
    const want = Buffer.from(sha, 'hex');
    for (let k = this.runs.length - 1; k >= 0; k--) {
      const run = this.runs[k];
      let lo = 0;
      let hi = run.count;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        readAt(run, this.block, mid, 1);
        const c = this.block.compare(want, 0, 32, 0, 32);
        if (c === 0) return { buf: this.block, at: 32 };
        if (c < 0) lo = mid + 1;
        else hi = mid;
      }
    }
    return null;
  }

  /** The record of `sha` in the old index, or -1 (it is left in `block` at 0): the sparse table
   * narrows it to a block, read in one go. */
  private find(sha: string): number {
    const old = this.old;
    if (!old || old.count === 0 || !/^[0-9a-f]{64}$/.test(sha)) return -1;
    const head = Number.parseInt(sha.slice(0, 8), 16);
    let lo = 0;
    let hi = this.sparse.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sparse[mid] < head) lo = mid + 1;
      else hi = mid;
    }
    // Records with this head start in the block before the first whose first head is not lower.
    const want = Buffer.from(sha, 'hex');
    for (let first = Math.max(lo - 1, 0) * STRIDE; first < old.count; first += 2 * STRIDE) {
      const n = Math.min(2 * STRIDE, old.count - first);
      readAt(old, this.block, first, n);
      for (let j = 0; j < n; j++) {
        const c = this.block.compare(want, 0, 32, j * RECORD, j * RECORD + 32);
        if (c === 0) {
          this.block.copy(this.block, 0, j * RECORD, (j + 1) * RECORD);
          return first + j;
        }
        if (c > 0) return -1;
      }
    }
    return -1;
  }
}

/** A position in a sorted stream of records: the current one is at `at` in `buf`. */
interface Cursor {
  buf: Buffer;
  at: number;
  /** Which source: a higher rank is newer and wins over a lower one with the same sha256. */
  rank: number;
  /** The current record's number in its source. */
  index: number;
  /** Moves to the next record; false at the end. */
  next(): boolean;
}

function fileCursor(file: RecordFile, rank: number): Cursor {
  const buf = Buffer.alloc(STREAM_RECORDS * RECORD);
  let loaded = 0;
  let base = 0;
  const c: Cursor = {
    buf,
    at: -RECORD,
    rank,
    index: -1,
    next() {
      c.index++;
      if (c.index >= file.count) return false;
      if (c.index >= base + loaded) {
        base = c.index;
        loaded = Math.min(STREAM_RECORDS, file.count - base);
        readAt(file, buf, base, loaded);
      }
      c.at = (c.index - base) * RECORD;
      return true;
    },
  };
  return c;
}

function memoryCursor(fresh: Map<string, number>, stamps: Buffer, rank: number): Cursor {
  const keys = [...fresh.keys()].sort();
  const buf = Buffer.alloc(RECORD);
  const c: Cursor = {
    buf,
    at: 0,
    rank,
    index: -1,
    next() {
      if (++c.index >= keys.length) return false;
      buf.write(keys[c.index], 0, 32, 'hex');
      const at = fresh.get(keys[c.index])!;
      stamps.copy(buf, 32, at, at + 32);
      return true;
    },
  };
  return c;
}

/** Hands `take` the records of sorted `sources` in sha256 order, each sha256 once: the newest
 * source's record. */
function mergeCursors(sources: Cursor[], take: (c: Cursor) => void): void {
  const heap = new MergeHeap(sources, (a, b) => {
    const c = a.buf.compare(b.buf, b.at, b.at + 32, a.at, a.at + 32);
    return c < 0 || (c === 0 && a.rank > b.rank);
  });
  const last = Buffer.alloc(32);
  let any = false;
  for (let top = heap.top; top; heap.advance(), top = heap.top) {
    if (!any || top.buf.compare(last, 0, 32, top.at, top.at + 32) !== 0) {
      top.buf.copy(last, 0, top.at, top.at + 32);
      any = true;
      take(top);
    }
  }
}

/** The sha256 of the first `length` bytes of the file, read in chunks. */
function digestOf(fd: number, length: number): Buffer {
  const hash = createHash('sha256');
  const buf = Buffer.alloc(1 << 20);
  for (let at = 0; at < length; ) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, length - at), at);
    if (n <= 0) throw new Error('the index ended while it was being hashed');
    hash.update(buf.subarray(0, n));
    at += n;
  }
  return hash.digest();
}

/** The number of records of an index file, or null when it is not one whole. */
function whole(fd: number): number | null {
  const size = fstatSync(fd).size;
  if (size < HEAD + TRAILER) return null;
  const head = Buffer.alloc(HEAD);
  readSync(fd, head, 0, HEAD, 0);
  if (!head.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const count = head.readBigUInt64BE(MAGIC.length);
  if (BigInt(size) !== BigInt(HEAD + TRAILER) + count * BigInt(RECORD)) return null;
  const trailer = Buffer.alloc(TRAILER);
  readSync(fd, trailer, 0, TRAILER, size - TRAILER);
  if (!digestOf(fd, size - TRAILER).equals(trailer)) return null;
  return Number(count);
}

/** Scratch runs a killed sync left (its process gone). */
function removeDeadRuns(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = RUN_FILE.exec(name);
    if (m && !processAlive(Number(m[1]))) rmSync(join(dir, name), { force: true });
  }
}
