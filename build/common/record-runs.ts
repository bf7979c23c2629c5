// Tables of records on disk, for what must not hold a whole release in memory (a mirror's sync:
// edge/mirror/sync-scratch.ts; gc's ledger: build/publish/sweep-ledger.ts): plain files, no database,
// so the one-file server (build/bundle/server.ts) carries them with no native module. A table keeps the
// records added last in memory, in one batch of bounded size; a full batch is written to a file of
// its own (a run: sorted by key for a sorted table), and a sorted table's runs are merged as streams
// (merge-heap.ts), so memory stays bounded whatever the number of records:
//   - SortedTable: read back in key order (ties in the order added; with `unique`, only the first
//     record added of each key), or looked up by key once merged into one run.
//   - LogTable: read back in the order added, records added while it is read included.
// A run is a sequence of blocks; in a block, records follow each other, each after its length
// (2 bytes), and a zero length (or the block's end) ends them. No record straddles two blocks, so a
// reader holds one block, and a lookup finds the block by its first key and reads it alone.
import { closeSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { MergeHeap, type MergeCursor } from './merge-heap.js';

export const BLOCK_BYTES = 64 * 1024;
/** The longest record: it fits in a block after its length. */
export const MAX_RECORD_BYTES = BLOCK_BYTES - 2;
/** Bytes of records a table holds in memory before writing them as a run. */
const BATCH_BYTES = 4 * 1024 * 1024;
/** Runs of one generation merged into one run of the next: what a merge reads at once. A table then
 * has a few runs per generation, and generations grow as the logarithm of its size. */
const FAN_IN = 16;

/** A record read back: its bytes are `buf[at, at + length)`, valid until the next one is read. */
export interface RecordView {
  buf: Buffer;
  at: number;
  length: number;
}

interface Run {
  path: string;
  fd: number;
  blocks: number;
  records: number;
  /** How many merges made it: runs of one generation are merged together. */
  generation: number;
}

/** Records kept in memory, then written in runs to files `<dir>/<name>-<n>.run`. */
abstract class RunTable {
  protected readonly runs: Run[] = [];
  private readonly batch: Buffer;
  private used = 0;
  /** Where each record of the batch starts (after its length), in the order added. */
  protected starts: number[] = [];
  private written = 0;
  private added = 0;

  constructor(
    private readonly dir: string,
    private readonly name: string,
    batchBytes = BATCH_BYTES,
  ) {
    // At least one block: the longest record must fit in a batch.
    this.batch = Buffer.alloc(Math.max(batchBytes, BLOCK_BYTES));
  }

  /** Records added. */
  get size(): number {
    return this.added;
  }

  add(record: Uint8Array): void {
    const length = record.length;
    if (length === 0 || length > MAX_RECORD_BYTES)
      throw new Error(`a scratch record of ${length} bytes: records are 1 to ${MAX_RECORD_BYTES} bytes`);
    this.changed();
    if (this.used + 2 + length > this.batch.length) this.flush();
    this.batch.writeUInt16BE(length, this.used);
    this.batch.set(record, this.used + 2);
    this.starts.push(this.used + 2);
    this.used += 2 + length;
    this.added++;
  }

  /** Writes the batch as a run. */
  flush(): void {
    if (this.starts.length === 0) return;
    const out = this.writer();
    for (const at of this.ordered(this.batch, this.starts)) out.add(this.batch, at, this.batch.readUInt16BE(at - 2));
    this.runs.push(out.end(0));
    this.starts = [];
    this.used = 0;
    this.flushed();
  }

  close(): void {
    for (const run of this.runs.splice(0)) closeRun(run);
  }

  protected writer(): RunWriter {
    return new RunWriter(join(this.dir, `${this.name}-${this.written++}.run`));
  }

  /** The batch's records (their starts) in the order a run holds them. */
  protected abstract ordered(batch: Buffer, starts: number[]): Iterable<number>;
  /** A record was added. */
  protected changed(): void {}
  /** A run was written. */
  protected flushed(): void {}
}

/** Records in key order: the key is a record's first `keyBytes` bytes, compared as unsigned bytes. */
export class SortedTable extends RunTable {
  /** The lookup of the single run the table was merged into, while nothing is added. */
  private lookup: BlockLookup | null = null;
  /** Reads in key order under way: a record added meanwhile could merge away the runs they read. */
  private reading = 0;

  constructor(
    dir: string,
    name: string,
    private readonly o: { keyBytes: number; unique: boolean; batchBytes?: number },
  ) {
    super(dir, name, o.batchBytes);
  }

  /** Merges every run into one, and answers its records (each key once, if unique). */
  compact(): number {
    this.flush();
    if (this.runs.length > 1) this.runs.splice(0, this.runs.length, this.merge(this.runs));
    return this.runs[0]?.records ?? 0;
  }

  /** The first record added with this key (`key` is `keyBytes` long), or null. Merges the runs first
   * when records were added since the last lookup. Lookups in ascending key order read each block
   * once. */
  find(key: Buffer): RecordView | null {
    if (!this.lookup) {
      this.compact();
      if (this.runs.length === 0) return null;
      this.lookup = new BlockLookup(this.runs[0], this.o.keyBytes);
    }
    return this.lookup.find(key);
  }

  /** Every record in key order (each key once, if unique), one at a time. */
  *records(): Generator<RecordView> {
    this.flush();
    this.reading++;
    try {
      yield* this.merged([...this.runs]);
    } finally {
      this.reading--;
    }
  }

  protected ordered(batch: Buffer, starts: number[]): Iterable<number> {
    const k = this.o.keyBytes;
    // A key's first bytes as two numbers, compared before the bytes themselves: most keys differ there.
    const head = Math.min(k, 6);
    const next = Math.min(k - head, 6);
    const first = new Float64Array(starts.length);
    const second = new Float64Array(starts.length);
    for (let i = 0; i < starts.length; i++) {
      first[i] = batch.readUIntBE(starts[i], head);
      if (next > 0) second[i] = batch.readUIntBE(starts[i] + head, next);
    }
    const order = Array.from(starts.keys());
    // Stable: of equal keys, the one added first comes first.
    order.sort((x, y) => {
      const d = first[x] - first[y] || second[x] - second[y];
      if (d !== 0) return d;
      const a = starts[x];
      const b = starts[y];
      return batch.compare(batch, b, b + k, a, a + k) || x - y;
    });
    const sorted = order.map((i) => starts[i]);
    if (!this.o.unique) return sorted;
    return sorted.filter(
      (at, i) => i === 0 || batch.compare(batch, sorted[i - 1], sorted[i - 1] + k, at, at + k) !== 0,
    );
  }

  protected changed(): void {
    if (this.reading > 0) throw new Error('a record was added to a sorted scratch table while it was read in order');
    this.lookup = null;
  }

  /** Runs of one generation, FAN_IN of them, merged into one of the next (the newest runs are
   * always the youngest generation, so they are at the end). */
  protected flushed(): void {
    for (;;) {
      const n = this.runs.length;
      if (n < FAN_IN) return;
      const generation = this.runs[n - 1].generation;
      const tail = this.runs.slice(n - FAN_IN);
      if (tail.some((r) => r.generation !== generation)) return;
      this.runs.splice(n - FAN_IN, FAN_IN, this.merge(tail));
    }
  }

  /** One run of `runs` (oldest first; removed), in key order, each key once if unique. */
  private merge(runs: Run[]): Run {
    const out = this.writer();
    for (const r of this.merged(runs)) out.add(r.buf, r.at, r.length);
    const merged = out.end(Math.max(...runs.map((r) => r.generation)) + 1);
    for (const r of runs) closeRun(r);
    return merged;
  }

  /** The records of `runs` (oldest first) in key order; of equal keys, the older run's first, and
   * only that one if unique. */
  private *merged(runs: Run[]): Generator<RecordView> {
    const k = this.o.keyBytes;
    const heap = new MergeHeap(
      runs.map((r, rank) => new RunCursor(r, rank)),
      (a, b) => {
        const c = a.buf.compare(b.buf, b.at, b.at + k, a.at, a.at + k);
        return c < 0 || (c === 0 && a.rank < b.rank);
      },
    );
    const last = Buffer.alloc(k);
    let any = false;
    for (let top = heap.top; top; heap.advance(), top = heap.top) {
      if (this.o.unique) {
        if (any && top.buf.compare(last, 0, k, top.at, top.at + k) === 0) continue;
        top.buf.copy(last, 0, top.at, top.at + k);
        any = true;
      }
      yield top;
    }
  }
}

/** Records in the order added. */
export class LogTable extends RunTable {
  /** Every record in the order added, one at a time; records added meanwhile come too. */
  *records(): Generator<RecordView> {
    for (let k = 0; ; k++) {
      if (k === this.runs.length) this.flush();
      if (k === this.runs.length) return;
      const cursor = new RunCursor(this.runs[k], k);
      while (cursor.next()) yield cursor;
    }
  }

  protected ordered(_batch: Buffer, starts: number[]): Iterable<number> {
    return starts;
  }
}

/** Writes a run block by block. */
class RunWriter {
  private readonly block = Buffer.alloc(BLOCK_BYTES);
  private used = 0;
  private blocks = 0;
  private records = 0;
  private readonly fd: number;

  constructor(private readonly path: string) {
    this.fd = openSync(path, 'w+');
  }

  add(src: Buffer, at: number, length: number): void {
    if (this.used + 2 + length > BLOCK_BYTES) this.endBlock();
    this.block.writeUInt16BE(length, this.used);
    src.copy(this.block, this.used + 2, at, at + length);
    this.used += 2 + length;
    this.records++;
  }

  end(generation: number): Run {
    this.endBlock();
    return { path: this.path, fd: this.fd, blocks: this.blocks, records: this.records, generation };
  }

  private endBlock(): void {
    if (this.used === 0) return;
    // A zero length after the last record ends the block.
    this.block.fill(0, this.used);
    writeSync(this.fd, this.block, 0, BLOCK_BYTES, this.blocks * BLOCK_BYTES);
    this.blocks++;
    this.used = 0;
  }
}

function readBlock(run: Run, block: number, buf: Buffer): void {
  const n = readSync(run.fd, buf, 0, BLOCK_BYTES, block * BLOCK_BYTES);
  if (n !== BLOCK_BYTES) throw new Error(`${run.path}: block ${block} is ${n} bytes, not ${BLOCK_BYTES}`);
}

function closeRun(run: Run): void {
  try {
    closeSync(run.fd);
  } finally {
    rmSync(run.path, { force: true });
  }
}

/** Reads a run's records in order, a block at a time. */
class RunCursor implements MergeCursor, RecordView {
  readonly buf = Buffer.alloc(BLOCK_BYTES);
  at = 0;
  length = 0;
  private pos = BLOCK_BYTES;
  private block = -1;

  constructor(
    private readonly run: Run,
    /** Which run: a lower rank was written earlier. */
    readonly rank: number,
  ) {}

  next(): boolean {
    for (;;) {
      const length = this.pos + 2 <= BLOCK_BYTES ? this.buf.readUInt16BE(this.pos) : 0;
      if (length > 0) {
        this.at = this.pos + 2;
        this.length = length;
        this.pos = this.at + length;
        return true;
      }
      if (++this.block >= this.run.blocks) return false;
      readBlock(this.run, this.block, this.buf);
      this.pos = 0;
    }
  }
}

/** Finds records by key in one sorted run with each key once: the block whose first key is the last
 * not above the key (a binary search reading first keys), then the record in it (a binary search in
 * memory). The block stays loaded, so lookups in ascending order read each block once. */
class BlockLookup {
  private readonly buf = Buffer.alloc(BLOCK_BYTES);
  private readonly probe: Buffer;
  /** The loaded block, where its records start, and the first key of the block after it. */
  private block = -1;
  private starts: number[] = [];
  private readonly nextFirst: Buffer;
  private hasNext = false;
  private readonly view: RecordView = { buf: this.buf, at: 0, length: 0 };

  constructor(
    private readonly run: Run,
    private readonly keyBytes: number,
  ) {
    this.probe = Buffer.alloc(keyBytes);
    this.nextFirst = Buffer.alloc(keyBytes);
  }

  find(key: Buffer): RecordView | null {
    if (this.run.blocks === 0) return null;
    if (!this.holds(key)) this.load(this.blockOf(key));
    const k = this.keyBytes;
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.starts[mid];
      const c = key.compare(this.buf, at, at + k);
      if (c === 0) {
        this.view.at = at;
        this.view.length = this.buf.readUInt16BE(at - 2);
        return this.view;
      }
      if (c < 0) hi = mid - 1;
      else lo = mid + 1;
    }
    return null;
  }

  /** Whether the loaded block is the one a key would be in. */
  private holds(key: Buffer): boolean {
    if (this.block < 0) return false;
    const first = this.starts[0];
    if (key.compare(this.buf, first, first + this.keyBytes) < 0) return this.block === 0;
    return !this.hasNext || key.compare(this.nextFirst) < 0;
  }

  /** The last block whose first key is not above `key` (the first block when none is). */
  private blockOf(key: Buffer): number {
    let lo = 0;
    let hi = this.run.blocks - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      this.firstKey(mid, this.probe);
      if (this.probe.compare(key) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private firstKey(block: number, into: Buffer): void {
    readSync(this.run.fd, into, 0, this.keyBytes, block * BLOCK_BYTES + 2);
  }

  private load(block: number): void {
    readBlock(this.run, block, this.buf);
    this.block = block;
    this.starts = [];
    for (let pos = 0; pos + 2 <= BLOCK_BYTES; ) {
      const length = this.buf.readUInt16BE(pos);
      if (length === 0) break;
      this.starts.push(pos + 2);
      pos += 2 + length;
    }
    this.hasNext = block + 1 < this.run.blocks;
    if (this.hasNext) this.firstKey(block + 1, this.nextFirst);
  }
}

/** Writes a sha256 (64 hex digits) raw at `at`, or throws naming what it was given. */
export function writeSha(buf: Buffer, at: number, sha: string): void {
  if (sha.length !== 64 || buf.write(sha, at, 32, 'hex') !== 32)
    throw new Error(`${JSON.stringify(sha.slice(0, 80))} is not a sha256 (64 hex digits)`);
}

/** Records decoded, `size` at a time. */
export function* pages<T>(records: Iterable<RecordView>, size: number, decode: (r: RecordView) => T): Generator<T[]> {
  let page: T[] = [];
  for (const r of records) {
    page.push(decode(r));
    if (page.length === size) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}
