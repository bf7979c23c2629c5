// A scratch SQLite file for one run of a command that must not hold a whole release in memory (gc's
// sweep ledger, publish's ledger). It lives in a directory of its own under the system's temporary
// directory, made for the run, so removing it can only remove what the run made; and it has the
// settings of a file thrown away on any failure (sqlite-settings.ts): no journal, no sync, a fixed
// page cache, sorts spilled to disk, and the file's lock held by its one connection.
import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyImportSettings } from '../release-db/sqlite-settings.js';
import { processAlive } from './live-process.js';

export interface ScratchDatabase {
  db: Database.Database;
  /** Closes the database and removes its directory (again is harmless). */
  remove(): void;
}

/** Opens a new scratch database in a new directory named `isoatlas-<name>-<pid>-…`, after removing
 * those of the same name whose process is gone (a run killed before it could remove its own). */
export function openScratchDatabase(name: string): ScratchDatabase {
  removeKilledRuns(name);
  const dir = mkdtempSync(join(tmpdir(), `isoatlas-${name}-${process.pid}-`));
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

/** Scratch directories of this kind left by runs whose process no longer runs. */
function removeKilledRuns(name: string): void {
  const pattern = new RegExp(`^isoatlas-${name}-([0-9]+)-[A-Za-z0-9]{6}$`);
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const entry of names) {
    const m = pattern.exec(entry);
    if (m && Number(m[1]) !== process.pid && !processAlive(Number(m[1])))
      rmSync(join(tmpdir(), entry), { recursive: true, force: true });
  }
}
