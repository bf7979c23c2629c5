// What a gc run counts, kept on disk rather than in memory: the objects and packs the protected
// releases reference, and those it will delete. A store of ten times human scale references about
// ten million objects; as JavaScript sets and maps they would take gigabytes, and gc would need more
// memory the larger the store grows. Tables of records in a scratch directory of its own under the
// system's temporary directory (record-runs.ts, scratch-dir.ts; removed when the run ends) keep gc's
// memory flat, and need no native module: a mirror's clean-up runs this in the one-file server.
import { rmSync } from 'node:fs';
import { LogTable, SortedTable, pages, writeSha } from '../common/record-runs.js';
import { openScratchDir } from '../common/scratch-dir.js';

/** Which namespace of the store a sha256 names: an object (objects/…) or a pack (packs/…). */
export type Kind = 'object' | 'pack';

export interface Doomed {
  sha: string;
  size: number;
  pack: boolean;
}

const SHA = 32;
const INT = 6;

// Records: referenced, a raw sha256 (one table per kind); doomed, sha256 32 | size 6 | pack 1.
export class SweepLedger {
  private readonly dir = openScratchDir('gc');
  private referenced!: Record<Kind, SortedTable>;
  private doomed!: LogTable;
  /** Rounds counted (`clear`): each has tables of its own. */
  private round = 0;
  private readonly record = Buffer.alloc(SHA + INT + 1);

  constructor() {
    this.tables();
  }

  /** Records shas as referenced (again is harmless). */
  reference(kind: Kind, shas: Iterable<string>): void {
    const table = this.referenced[kind];
    for (const sha of shas) {
      writeSha(this.record, 0, sha);
      table.add(this.record.subarray(0, SHA));
    }
  }

  /** Whether a sha is referenced; asked in ascending order, each block of the table is read once. */
  isReferenced(kind: Kind, sha: string): boolean {
    writeSha(this.record, 0, sha);
    return this.referenced[kind].find(this.record.subarray(0, SHA)) !== null;
  }

  referencedCount(kind: Kind): number {
    return this.referenced[kind].compact();
  }

  doom(batch: Doomed[]): void {
    const r = this.record;
    for (const d of batch) {
      writeSha(r, 0, d.sha);
      r.writeUIntBE(d.size, SHA, INT);
      r[SHA + INT] = d.pack ? 1 : 0;
      this.doomed.add(r);
    }
  }

  doomedCount(): number {
    return this.doomed.size;
  }

  /** What is to be deleted, `size` at a time, in the order it was recorded. */
  *doomedBatches(size: number): Generator<Doomed[]> {
    yield* pages(this.doomed.records(), size, (r) => ({
      sha: r.buf.toString('hex', r.at, r.at + SHA),
      size: r.buf.readUIntBE(r.at + SHA, INT),
      pack: r.buf[r.at + SHA + INT] === 1,
    }));
  }

  /** Forgets what was counted, for a new round. */
  clear(): void {
    this.closeTables();
    this.tables();
  }

  close(): void {
    try {
      this.closeTables();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  private tables(): void {
    const dir = this.dir;
    const n = this.round++;
    this.referenced = {
      object: new SortedTable(dir, `objects-${n}`, { keyBytes: SHA, unique: true }),
      pack: new SortedTable(dir, `packs-${n}`, { keyBytes: SHA, unique: true }),
    };
    this.doomed = new LogTable(dir, `doomed-${n}`);
  }

  private closeTables(): void {
    for (const t of [this.referenced.object, this.referenced.pack, this.doomed]) t.close();
  }
}
