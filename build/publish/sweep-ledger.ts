// What a gc run counts, kept on disk rather than in memory: the objects and packs the protected
// releases reference, and those it will delete. A store of ten times human scale references about
// ten million objects; as JavaScript sets and maps they would take gigabytes, and gc would need more
// memory the larger the store grows. A scratch SQLite file beside nothing else (a directory of its
// own under the system's temporary directory, removed when the run ends) keeps gc's memory flat.
import type Database from 'better-sqlite3';
import { openScratchDatabase, type ScratchDatabase } from '../common/scratch-database.js';

/** Which namespace of the store a sha256 names: an object (objects/…) or a pack (packs/…). */
export type Kind = 'object' | 'pack';

export interface Doomed {
  sha: string;
  size: number;
  pack: boolean;
}

export class SweepLedger {
  private readonly scratch: ScratchDatabase;
  private readonly db: Database.Database;
  private readonly insertReferenced: Database.Statement;
  private readonly selectReferenced: Database.Statement;
  private readonly insertDoomed: Database.Statement;

  constructor() {
    // A small page cache is enough: lookups follow the listing's order (by sha256), so recent pages
    // are the ones asked for again.
    this.scratch = openScratchDatabase('gc');
    this.db = this.scratch.db;
    this.db.exec(`
      CREATE TABLE referenced (kind TEXT NOT NULL, sha TEXT NOT NULL, PRIMARY KEY (kind, sha)) WITHOUT ROWID;
      CREATE TABLE doomed (sha TEXT NOT NULL, size INTEGER NOT NULL, pack INTEGER NOT NULL);
    `);
    this.insertReferenced = this.db.prepare('INSERT OR IGNORE INTO referenced (kind, sha) VALUES (?, ?)');
    this.selectReferenced = this.db.prepare('SELECT 1 FROM referenced WHERE kind = ? AND sha = ?').pluck();
    this.insertDoomed = this.db.prepare('INSERT INTO doomed (sha, size, pack) VALUES (?, ?, ?)');
  }

  /** Records shas as referenced (again is harmless), in one transaction. */
  reference(kind: Kind, shas: Iterable<string>): void {
    this.db.transaction(() => {
      for (const sha of shas) this.insertReferenced.run(kind, sha);
    })();
  }

  isReferenced(kind: Kind, sha: string): boolean {
    return this.selectReferenced.get(kind, sha) !== undefined;
  }

  referencedCount(kind: Kind): number {
    return this.db.prepare('SELECT count(*) FROM referenced WHERE kind = ?').pluck().get(kind) as number;
  }

  doom(batch: Doomed[]): void {
    this.db.transaction(() => {
      for (const d of batch) this.insertDoomed.run(d.sha, d.size, d.pack ? 1 : 0);
    })();
  }

  doomedCount(): number {
    return this.db.prepare('SELECT count(*) FROM doomed').pluck().get() as number;
  }

  /** What is to be deleted, `size` at a time, in the order it was recorded. */
  *doomedBatches(size: number): Generator<Doomed[]> {
    const page = this.db.prepare('SELECT rowid, sha, size, pack FROM doomed WHERE rowid > ? ORDER BY rowid LIMIT ?');
    let after = 0;
    for (;;) {
      const rows = page.all(after, size) as { rowid: number; sha: string; size: number; pack: number }[];
      if (!rows.length) return;
      after = rows.at(-1)!.rowid;
      yield rows.map((r) => ({ sha: r.sha, size: r.size, pack: r.pack === 1 }));
    }
  }

  /** Forgets what was counted, for a new round. */
  clear(): void {
    this.db.exec('DELETE FROM referenced; DELETE FROM doomed;');
  }

  close(): void {
    this.scratch.remove();
  }
}
