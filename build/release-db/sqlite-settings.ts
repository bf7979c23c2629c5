// SQLite settings of the files an import writes (the release database and its staging file), chosen
// in one place. Both files are rebuilt from the inputs whenever an import fails, so they trade
// crash safety for speed; and each import runs in a process whose peak RSS must not grow with the
// release, so every cache is a fixed size whatever the file's.

import type Database from 'better-sqlite3';

/** Page cache per connection (MiB). SQLite's default (2 MiB) makes index inserts in key order that
 * is not the table's re-read pages constantly; a larger one fills with the file and the process's
 * RSS grows with the release. This size keeps the working set of an index insert and stays flat. */
export const IMPORT_CACHE_MIB = 16;

/** Applies the write settings to a connection on a file that is thrown away if the import fails. */
export function applyImportSettings(db: Database.Database): void {
  // No rollback journal and no fsync: a failed import deletes the file (database.ts), so neither
  // protects anything; a transaction that must roll back (a track input) turns a journal on itself.
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.pragma(`cache_size = -${IMPORT_CACHE_MIB * 1024}`);
  // Memory-mapped pages count in the process's RSS as they are touched, which would grow with the
  // file; read() through the fixed page cache (and the kernel's file cache) does not.
  db.pragma('mmap_size = 0');
  // Sorts and temporary indexes (ORDER BY, GROUP BY over staged rows) spill to a file, not memory.
  db.pragma('temp_store = FILE');
}
