// The staging file of a core import: a scratch SQLite database beside the release being written,
// into which every input streams line by line, so that no input is ever held whole in memory. Rows
// go in through a batch writer (a transaction per batch); they come back in key order, a bounded
// page at a time, and checks over a whole input (duplicates, cross-references) are SQL over it.
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import type { Db } from '../release-db/database.js';
import { applyImportSettings } from '../release-db/sqlite-settings.js';
import { unversioned } from '../release-db/records.js';

/** Rows per write transaction and per page read back: enough to amortise a commit, few enough that a
 * page of isoforms with their exons is small. */
export const DEFAULT_BATCH_ROWS = 2000;

export class Staging {
  readonly db: Db;
  readonly path: string;

  constructor(
    beside: string,
    readonly batchRows = DEFAULT_BATCH_ROWS,
  ) {
    if (!Number.isInteger(batchRows) || batchRows < 1)
      throw new RangeError(`batch size must be a positive integer, got ${batchRows}`);
    this.path = `${beside}.staging-${process.pid}`;
    rmSync(this.path, { force: true });
    this.db = new Database(this.path);
    applyImportSettings(this.db);
    this.db.function('unversioned', { deterministic: true }, (id: unknown) =>
      typeof id === 'string' ? unversioned(id) : id,
    );
  }

  /** A writer that commits every `batchRows` rows. */
  writer(): BatchWriter {
    return new BatchWriter(this.db, this.batchRows);
  }

  /** Rows in key order, a page of `batchRows` at a time. `sqlFor(false)` selects the first page,
   * `sqlFor(true)` those after the key `after` returns for the last row of the previous page (its
   * values bound by name), both `LIMIT @limit`. Each page is read whole before it is yielded, so the
   * connection is free for writes between pages. */
  *pages<R>(
    sqlFor: (after: boolean) => string,
    after: (row: R) => Record<string, unknown>,
    params: Record<string, unknown> = {},
  ): Generator<R[]> {
    const first = this.db.prepare(sqlFor(false));
    const next = this.db.prepare(sqlFor(true));
    let key: Record<string, unknown> | null = null;
    for (;;) {
      const page = (key ? next : first).all({ ...params, ...key, limit: this.batchRows }) as R[];
      if (page.length === 0) return;
      yield page;
      if (page.length < this.batchRows) return;
      key = after(page[page.length - 1]!);
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
    rmSync(this.path, { force: true });
  }
}

/** Inserts run at once (so a duplicate is seen on its own line) inside a transaction that is
 * committed every `rows` rows and at the end. */
export class BatchWriter {
  private pending = 0;

  constructor(
    private readonly db: Db,
    private readonly rows: number,
  ) {}

  /** Runs an insert in the open batch, opening one when none is. */
  run(stmt: Database.Statement, ...params: unknown[]): Database.RunResult {
    if (this.pending === 0) this.db.exec('BEGIN');
    const result = stmt.run(...params);
    this.pending += 1;
    if (this.pending >= this.rows) this.commit();
    return result;
  }

  commit(): void {
    if (this.pending > 0) this.db.exec('COMMIT');
    this.pending = 0;
  }

  /** Gives up the open batch (after an error), leaving the connection usable. */
  abandon(): void {
    if (this.db.inTransaction) this.db.exec('ROLLBACK');
    this.pending = 0;
  }
}
