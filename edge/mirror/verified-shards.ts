// The mirror's record of the manifest shards it holds whole (`verified-shards.txt`, beside the
// verified index): the head of each shard of the releases it held when its last sync finished, with
// the chain of bases that head names. A sync reads a shard whose head is recorded not at all, and a
// new head only down to the first base the record names, checking the files that part of the chain
// decides: after a 1% change (each new head a small delta over the last release's head) a re-sync
// looks at the change, not at the million files of the release.
//
// The record says "every file this shard lists was held and verified when the sync finished". It is
// trusted only while that is still so, as far as a stat can tell: the sync first compares every object
// of the verified index (verified-index.ts) with its file, and one missing or changed file, a missing
// or damaged index, objects `isoatlas serve` refused (refused-record.ts) or `--verify` means this sync
// reads every shard, as without a record. So the record spares the reading of manifests and the work
// per listed file, never the check of the disk.
//
// Format: the first line `isoatlas verified shards 1`; a line per head, `<sha256> <bases>` sorted,
// where <bases> is the sha256 of the head's list of bases (basesDigest); the last line the sha256 of
// the lines before it. A missing or damaged record only means "read every shard".
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ShardRef } from '../contract/manifest.js';

export const VERIFIED_SHARDS = 'verified-shards.txt';

const FIRST_LINE = 'isoatlas verified shards 1';
const LINE = /^([0-9a-f]{64}) ([0-9a-f]{64})$/;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** What names a chain of bases: a base is known only with the rest of the chain it was recorded with. */
export const basesDigest = (bases: ShardRef[]) => sha256(bases.map((b) => `${b.sha256} ${b.size}\n`).join(''));

export class VerifiedShards {
  private constructor(private readonly heads: Map<string, string>) {}

  /** The record in the mirror at `dir`; an empty one when there is none or it is damaged. */
  static read(dir: string, say: (line: string) => void): VerifiedShards {
    const file = join(dir, VERIFIED_SHARDS);
    let text: string;
    try {
      text = readFileSync(file, 'latin1');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        say(`cannot read ${file} (${(err as NodeJS.ErrnoException).code}): every manifest shard is read`);
      return VerifiedShards.empty();
    }
    const lines = text.split('\n');
    const body = lines.slice(0, -2);
    const heads = new Map<string, string>();
    const whole =
      lines.length >= 3 &&
      lines.at(-1) === '' &&
      body[0] === FIRST_LINE &&
      lines.at(-2) === sha256(body.map((l) => `${l}\n`).join('')) &&
      body.slice(1).every((l) => {
        const m = LINE.exec(l);
        if (m) heads.set(m[1], m[2]);
        return m !== null;
      });
    if (!whole) {
      say(`${file} is damaged: every manifest shard is read, and the record is written anew`);
      return VerifiedShards.empty();
    }
    return new VerifiedShards(heads);
  }

  static empty(): VerifiedShards {
    return new VerifiedShards(new Map());
  }

  get size(): number {
    return this.heads.size;
  }

  /** Whether the shard whose head is `sha256` is held whole. */
  holds(sha256: string): boolean {
    return this.heads.has(sha256);
  }

  /** The digest of the bases of a recorded head. */
  basesOf(sha256: string): string | undefined {
    return this.heads.get(sha256);
  }

  /** Whether `base`, as the head of a chain continuing with `rest`, is a shard held whole. */
  knows(base: ShardRef, rest: ShardRef[]): boolean {
    return this.heads.get(base.sha256) === basesDigest(rest);
  }

  /** Records a head whose shard the sync holds whole. */
  add(sha256: string, bases: string): void {
    this.heads.set(sha256, bases);
  }

  /** Writes the record (scratch, then rename: a reader sees the old or the new one). */
  write(dir: string): void {
    const file = join(dir, VERIFIED_SHARDS);
    const lines = [FIRST_LINE, ...[...this.heads].sort(([a], [b]) => (a < b ? -1 : 1)).map(([h, b]) => `${h} ${b}`)];
    const body = lines.map((l) => `${l}\n`).join('');
    const scratch = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      writeFileSync(scratch, `${body}${sha256(body)}\n`);
      renameSync(scratch, file);
    } finally {
      rmSync(scratch, { force: true });
    }
  }

  /** Removes the record: what it says may no longer be so. */
  static remove(dir: string): void {
    rmSync(join(dir, VERIFIED_SHARDS), { force: true });
  }
}
