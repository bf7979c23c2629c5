// Scratch storage for what the build gathers across the whole release but writes shard by shard
// (manifest entries, alias keys, search postings, the structure map): a throwaway SQLite file beside
// the output rather than arrays in memory, so the build's memory does not grow with the release.
// SQLite sorts what does not fit its cache in temporary files.
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { MAX_SHARDS, fnv1a } from '../../edge/contract/shards.js';

/** The finest shard a key can fall in: its shard for any shard count is `bucketOf(key) & (count - 1)`
 * (counts are powers of two up to MAX_SHARDS), so rows spilled before the count is known can be
 * grouped by shard afterwards. */
export const bucketOf = (key: string) => fnv1a(key) & (MAX_SHARDS - 1);

/** Rows added per transaction: a commit per row would dominate the spill's cost. */
const ROWS_PER_COMMIT = 4096;

/** Page cache of a scratch file (KiB): what an ORDER BY sorts in memory before it spills a run. */
const SORT_CACHE_KIB = 4096;

export class Scratch {
  readonly db: Database.Database;

  /** `cacheKib`: the page cache while rows are only appended, which touches the last pages alone
   * (a sort raises it: sorting()). */
  constructor(
    readonly path: string,
    cacheKib = SORT_CACHE_KIB,
  ) {
    rmSync(path, { force: true });
    this.db = new Database(path);
    // Thrown away after the build: no journal, no syncs.
    this.db.pragma('journal_mode = OFF');
    this.db.pragma('synchronous = OFF');
    // An ORDER BY keeps in memory about the page cache's size and merges the rest from temporary
    // files; with temp_store = MEMORY it would keep everything.
    this.db.pragma('temp_store = FILE');
    this.db.pragma(`cache_size = -${cacheKib}`);
    // Mapped pages of this file would count in the process's resident memory.
    this.db.pragma('mmap_size = 0');
    // Its one connection holds the file's lock: no statement takes it again or checks for changes.
    this.db.pragma('locking_mode = EXCLUSIVE');
  }

  /** Gives the sorts that follow the page cache they sort in. */
  sorting(): void {
    this.db.pragma(`cache_size = -${SORT_CACHE_KIB}`);
  }

  /** An insert statement whose rows are committed in batches; flush() before reading the table. */
  spill(sql: string): Spill {
    return new Spill(this.db, sql);
  }

  close(): void {
    if (this.db.open) this.db.close();
    rmSync(this.path, { force: true });
  }
}

export class Spill {
  private rows: unknown[][] = [];
  private readonly insert: (rows: unknown[][]) => void;

  constructor(db: Database.Database, sql: string) {
    const stmt = db.prepare(sql);
    this.insert = db.transaction((rows: unknown[][]) => {
      for (const row of rows) stmt.run(row);
    });
  }

  add(...row: unknown[]): void {
    this.rows.push(row);
    if (this.rows.length >= ROWS_PER_COMMIT) this.flush();
  }

  flush(): void {
    if (!this.rows.length) return;
    this.insert(this.rows);
    this.rows = [];
  }
}
