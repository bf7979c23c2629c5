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
// Format (big-endian), chosen to be read as one buffer and searched in place (no object per entry,
// so a million entries cost their bytes, about 64 MB), and to be streamed in order when a sync one
// day merges it with a sorted list of what it needs:
//   magic  "IAVIDX01"                               8 bytes
//   count  u64                                      8 bytes
//   count records, sorted by sha256, each RECORD bytes:
//     sha256 (raw) 32 | size f64 | mtime ms f64 | ctime ms f64 | inode f64
//   sha256 of everything before it                  32 bytes
// It is written whole to a scratch file and renamed over the old one, so a reader sees either. A
// missing, truncated or otherwise damaged index only means "verify everything" (said once), never a
// failure.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const VERIFIED_INDEX = 'verified-objects.idx';

const MAGIC = Buffer.from('IAVIDX01', 'latin1');
const RECORD = 64;
const HEAD = MAGIC.length + 8;
const TRAILER = 32;

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

export class VerifiedIndex {
  /** Records of the index read at the start, kept as read. */
  private readonly records: Buffer;
  private readonly count: number;
  /** The first four bytes of each record's sha256: what the search runs on. */
  private readonly heads: Uint32Array;
  /** Records of `records` seen again by this run with the same stamp: kept as they are. */
  private readonly confirmed: Uint8Array;
  /** Objects hashed or written by this run: where their stamp is in `stamps`. */
  private readonly fresh = new Map<string, number>();
  private stamps = Buffer.alloc(32 * 1024);

  private constructor(records: Buffer) {
    this.records = records;
    this.count = records.length / RECORD;
    this.heads = new Uint32Array(this.count);
    for (let i = 0; i < this.count; i++) this.heads[i] = records.readUInt32BE(i * RECORD);
    this.confirmed = new Uint8Array(this.count);
  }

  /** The index of the mirror in `dir`; an empty one (every object is hashed) when there is none or
   * it is damaged, which `say` is told. */
  static read(dir: string, say: (line: string) => void): VerifiedIndex {
    const file = join(dir, VERIFIED_INDEX);
    let body: Buffer;
    try {
      body = readFileSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        say(`cannot read ${file} (${(err as NodeJS.ErrnoException).code}): every object the mirror holds is hashed`);
      else say(`no index of verified objects (${VERIFIED_INDEX}) yet: every object the mirror holds is hashed`);
      return new VerifiedIndex(Buffer.alloc(0));
    }
    const records = parse(body);
    if (!records) {
      say(`${file} is damaged: every object the mirror holds is hashed, and the index is written anew`);
      return new VerifiedIndex(Buffer.alloc(0));
    }
    return new VerifiedIndex(records);
  }

  /** An index trusting nothing (`--verify`): the one it replaces is rewritten from what is hashed. */
  static empty(): VerifiedIndex {
    return new VerifiedIndex(Buffer.alloc(0));
  }

  /** Whether the object was verified when its file had this stamp: `first` when the index read at
   * the start says so (it stays in the index), `again` when this run said so already, else null. */
  trusts(sha: string, stamp: Stamp): 'first' | 'again' | null {
    const fresh = this.fresh.get(sha);
    if (fresh !== undefined) return stampIs(this.stamps, fresh, stamp) ? 'again' : null;
    const i = this.find(sha);
    if (i < 0 || !stampIs(this.records, i * RECORD + 32, stamp)) return null;
    if (this.confirmed[i]) return 'again';
    this.confirmed[i] = 1;
    return 'first';
  }

  /** Whether this run verified the object (hashed it, wrote it, or trusted it by its stamp). */
  verifiedNow(sha: string): boolean {
    if (this.fresh.has(sha)) return true;
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
  }

  /** Writes the index of what this run verified, plus the records of the old one it did not look at
   * whose files are still there unchanged (objects of releases the mirror no longer holds, kept for
   * their grace period, say): what the clean-up deleted drops out. Both are in sha256 order, so they
   * are merged, not sorted. Atomic (scratch, then rename). Returns the number of records. */
  write(dir: string, stampOfObject: (sha: string) => Stamp | null): number {
    const fresh = [...this.fresh.keys()].sort();
    const out = Buffer.alloc(HEAD + (this.count + fresh.length) * RECORD + TRAILER);
    let n = 0;
    const putFresh = (sha: string) => {
      const at = HEAD + n++ * RECORD;
      out.write(sha, at, 32, 'hex');
      this.stamps.copy(out, at + 32, this.fresh.get(sha)!, this.fresh.get(sha)! + 32);
    };
    let f = 0;
    for (let i = 0; i < this.count; i++) {
      const sha = this.records.toString('hex', i * RECORD, i * RECORD + 32);
      while (f < fresh.length && fresh[f] < sha) putFresh(fresh[f++]);
      if (f < fresh.length && fresh[f] === sha) continue; // hashed again: the fresh stamp wins
      let keep = this.confirmed[i] === 1;
      if (!keep) {
        const now = stampOfObject(sha);
        keep = now !== null && stampIs(this.records, i * RECORD + 32, now);
      }
      if (keep) this.records.copy(out, HEAD + n++ * RECORD, i * RECORD, (i + 1) * RECORD);
    }
    while (f < fresh.length) putFresh(fresh[f++]);
    MAGIC.copy(out);
    out.writeBigUInt64BE(BigInt(n), MAGIC.length);
    const end = HEAD + n * RECORD;
    createHash('sha256').update(out.subarray(0, end)).digest().copy(out, end);
    const file = join(dir, VERIFIED_INDEX);
    const scratch = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      writeFileSync(scratch, out.subarray(0, end + TRAILER));
      renameSync(scratch, file);
    } finally {
      rmSync(scratch, { force: true });
    }
    return n;
  }

  /** The record of `sha`, or -1: a binary search over the first four bytes, then the whole hash. */
  private find(sha: string): number {
    if (this.count === 0 || !/^[0-9a-f]{64}$/.test(sha)) return -1;
    const head = Number.parseInt(sha.slice(0, 8), 16);
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.heads[mid] < head) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.count && this.heads[i] === head; i++)
      if (this.records.toString('hex', i * RECORD, i * RECORD + 32) === sha) return i;
    return -1;
  }
}

/** The records of an index file, or null when it is not one whole. */
function parse(body: Buffer): Buffer | null {
  if (body.length < HEAD + TRAILER || !body.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const count = body.readBigUInt64BE(MAGIC.length);
  if (BigInt(body.length) !== BigInt(HEAD + TRAILER) + count * BigInt(RECORD)) return null;
  const end = body.length - TRAILER;
  const digest = createHash('sha256').update(body.subarray(0, end)).digest();
  if (!digest.equals(body.subarray(end))) return null;
  return body.subarray(HEAD, end);
}
