// A scratch SQLite file for one run of a command that must not hold a whole release in memory
// (publish's ledger). It lives in a scratch directory of its own (scratch-dir.ts); and it has the
// settings of a file thrown away on any failure (sqlite-settings.ts): no journal, no sync, a fixed
// page cache, sorts spilled to disk, and the file's lock held by its one connection.
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { applyImportSettings } from '../release-db/sqlite-settings.js';
import { openScratchDir } from './scratch-dir.js';

export interface ScratchDatabase {
  db: Database.Database;
  /** Closes the database and removes its directory (again is harmless). */
  remove(): void;
}

/** Opens a new scratch database in a new scratch directory (scratch-dir.ts). */
export function openScratchDatabase(name: string): ScratchDatabase {
  const dir = openScratchDir(name);
  let db: Database.Database;
  try {
    db = new Database(join(dir, 'ledger.sqlite'));
    applyImportSettings(db);
    // One connection only ever opens it: holding the lock spares every statement taking it again
    // (and checking whether another writer changed the file).
    db.pragma('locking_mode = EXCLUSIVE');
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    db,
    remove() {
      if (db.open) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
