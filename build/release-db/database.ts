// Opening and writing release databases. Every write goes to a temporary file next to the target and
// is renamed over it only after the whole import succeeded, so a failed or interrupted import never
// leaves a half-written release behind.
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from '../common/errors.js';
import { DDL, SCHEMA_VERSION } from './schema.js';
import { applyImportSettings } from './sqlite-settings.js';

export type Db = Database.Database;

function tempPathFor(path: string) {
  return `${path}.tmp-${process.pid}`;
}

/** Runs `work` on the database at `tmp`; on success checks it, compacts it and renames it to `path`,
 * on failure deletes it. */
async function commitOrDiscard(tmp: string, path: string, work: (db: Db) => Promise<void>): Promise<void> {
  const db = new Database(tmp);
  try {
    applyImportSettings(db); // the temp file is thrown away on failure (sqlite-settings.ts)
    db.pragma('foreign_keys = ON');
    await work(db);
    const violations = db.pragma('foreign_key_check') as unknown[];
    if (violations.length) throw new Error(`release database violates a foreign key: ${JSON.stringify(violations[0])}`);
    // Compact only when something was deleted: rewriting a GB-sized release that has no free pages
    // gains nothing (20 s at human scale).
    if ((db.pragma('freelist_count', { simple: true }) as number) > 0) db.exec('VACUUM');
    db.close();
    renameSync(tmp, path);
  } catch (err) {
    if (db.open) db.close();
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Creates a new release database at `path` by running `fill` on an empty one. */
/** A new release database can be written at `path`: its directory exists (checked before any work). */
export function checkNewDbPath(path: string): void {
  const dir = dirname(resolve(path));
  if (!existsSync(dir))
    throw new UsageError(`--out ${path}: the directory ${dir} does not exist; create it or name another path`);
}

export async function createReleaseDb(path: string, fill: (db: Db) => Promise<void>): Promise<void> {
  checkNewDbPath(path);
  const tmp = tempPathFor(path);
  rmSync(tmp, { force: true });
  await commitOrDiscard(tmp, path, async (db) => {
    db.exec(DDL);
    db.prepare('INSERT INTO release_meta (key, value) VALUES (?, ?)').run('schema_version', String(SCHEMA_VERSION));
    await fill(db);
  });
}

/** A --db that names no file: the command line's to fix (exit 2), as a missing --out directory is. */
const noReleaseDb = (path: string) =>
  new UsageError(`no release database at ${path}: check --db, or create it with \`isoatlas import core\``);

/** Changes an existing release database: `change` runs on a copy, which replaces the original on success. */
export async function updateReleaseDb(path: string, change: (db: Db) => Promise<void>): Promise<void> {
  if (!existsSync(path)) throw noReleaseDb(path);
  const tmp = tempPathFor(path);
  copyFileSync(path, tmp);
  await commitOrDiscard(tmp, path, change);
}

export function openReleaseDb(path: string): Db {
  if (!existsSync(path)) throw noReleaseDb(path);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const version = (
    db.prepare("SELECT value FROM release_meta WHERE key = 'schema_version'").get() as { value: string } | undefined
  )?.value;
  if (version !== String(SCHEMA_VERSION)) {
    db.close();
    throw new Error(
      `${path} has release schema ${version ?? 'unknown'}, this isoatlas reads ${SCHEMA_VERSION}: re-run the import`,
    );
  }
  return db;
}
