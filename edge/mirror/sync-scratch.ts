// A sync's scratch tables, on disk (a SQLite file in a hidden directory of the mirror, removed when
// the sync ends): what the held releases list, where each packed object lies, what is missing. They
// hold one row per object, so a release ten times human scale costs the sync disk, not memory: the
// sync reads them back in bounded pages, in the order each step needs (by sha256 to check what is
// held, by pack and offset to read ranges).
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../../build/common/live-process.js';

/** Rows inserted in one transaction. */
const BATCH = 10_000;
/** Rows read back at once. */
export const PAGE = 4096;
/** SQLite's page cache, in KiB: what the tables cost in memory, whatever their size. */
const CACHE_KIB = 16 * 1024;
const SCRATCH_DIR = /^\.sync-scratch-([0-9]+)-[0-9a-f]+$/;

export interface Wanted {
  sha256: string;
  size: number;
  path: string;
}

/** A missing object with its place in a pack. */
export interface MissingPacked extends Wanted {
  pack: number;
  offset: number;
  length: number;
}

const hex = (b: Buffer) => b.toString('hex');
const raw = (sha: string) => Buffer.from(sha, 'hex');

export class SyncScratch {
  private readonly db: Database.Database;
  /** Packs by number (the tables name a pack by its place here): a few thousand at most. */
  readonly packs: string[] = [];
  private readonly packNumbers = new Map<string, number>();
  private pending: (() => void)[] = [];
  /** Places in packs are queued: a lookup must flush them first. */
  private packedQueued = false;
  private readonly statements: Record<string, Database.Statement>;
  private whereStatement: Database.Statement | null = null;

  private constructor(readonly dir: string) {
    this.db = new Database(join(dir, 'scratch.sqlite'));
    this.db.pragma('journal_mode = OFF');
    this.db.pragma('synchronous = OFF');
    this.db.pragma('temp_store = FILE');
    this.db.pragma(`cache_size = -${CACHE_KIB}`);
    this.db.exec(`
      CREATE TABLE wanted (sha BLOB NOT NULL, size INTEGER NOT NULL, path TEXT NOT NULL);
      CREATE TABLE packed (sha BLOB NOT NULL, pack INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL);
      CREATE TABLE missing (sha BLOB NOT NULL, size INTEGER NOT NULL, path TEXT NOT NULL, pack INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL);
      CREATE TABLE alone (sha BLOB NOT NULL, size INTEGER NOT NULL, path TEXT NOT NULL);
    `);
    const s = (sql: string) => this.db.prepare(sql);
    this.statements = {
      wanted: s('INSERT INTO wanted VALUES (?, ?, ?)'),
      packed: s('INSERT INTO packed VALUES (?, ?, ?, ?)'),
      missing: s('INSERT INTO missing VALUES (?, ?, ?, ?, ?, ?)'),
      alone: s('INSERT INTO alone VALUES (?, ?, ?)'),
    };
  }

  /** A new scratch directory in the mirror at `root` (hidden: a mirror's check of its directory
   * skips dot names); those of syncs whose process is gone are removed first. */
  static open(root: string): SyncScratch {
    for (const name of safeList(root)) {
      const m = SCRATCH_DIR.exec(name);
      if (m && !processAlive(Number(m[1]))) rmSync(join(root, name), { recursive: true, force: true });
    }
    const dir = join(root, `.sync-scratch-${process.pid}-${randomBytes(4).toString('hex')}`);
    mkdirSync(dir, { recursive: true });
    return new SyncScratch(dir);
  }

  close(): void {
    try {
      this.db.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  /** The number of a pack, given on first sight. */
  packNumber(sha: string): number {
    let n = this.packNumbers.get(sha);
    if (n === undefined) {
      n = this.packs.length;
      this.packs.push(sha);
      this.packNumbers.set(sha, n);
    }
    return n;
  }

  addWanted(sha: string, size: number, path: string): void {
    this.queue(() => this.statements.wanted.run(raw(sha), size, path));
  }

  /** An object's place in a pack; of two places, the first given is used. */
  addPacked(sha: string, pack: number, offset: number, length: number): void {
    this.queue(() => this.statements.packed.run(raw(sha), pack, offset, length));
    this.packedQueued = true;
  }

  addMissing(o: Wanted, at: { pack: number; offset: number; length: number } | null): void {
    if (at) this.queue(() => this.statements.missing.run(raw(o.sha256), o.size, o.path, at.pack, at.offset, at.length));
    else this.addAlone(o);
  }

  /** A missing object read on its own (in no pack, or refused from one). */
  addAlone(o: Wanted): void {
    this.queue(() => this.statements.alone.run(raw(o.sha256), o.size, o.path));
  }

  /** Where an object lies in a pack, or null. */
  where(sha: string): { pack: number; offset: number; length: number } | null {
    if (this.packedQueued) this.flush();
    // Indexed at the first lookup, once the pack indexes are in: one sort instead of an index kept
    // up to date through a million inserts in sha256 (random) order.
    this.whereStatement ??= (() => {
      this.db.exec('CREATE INDEX IF NOT EXISTS packed_sha ON packed (sha)');
      return this.db.prepare('SELECT pack, offset, length FROM packed WHERE sha = ? ORDER BY rowid LIMIT 1');
    })();
    return (this.whereStatement.get(raw(sha)) as { pack: number; offset: number; length: number }) ?? null;
  }

  /** Drops the index of places before many more are added: it is built again at the next lookup. */
  unindexPacked(): void {
    this.flush();
    this.db.exec('DROP INDEX IF EXISTS packed_sha');
    this.whereStatement = null;
  }

  /** Indexes what the next steps read in order; once every wanted object is added. */
  indexWanted(): void {
    this.flush();
    this.db.exec('CREATE INDEX IF NOT EXISTS wanted_sha ON wanted (sha)');
  }

  /** The number of distinct wanted objects. */
  wantedCount(): number {
    this.indexWanted();
    return (this.db.prepare('SELECT count(DISTINCT sha) AS n FROM wanted').get() as { n: number }).n;
  }

  /** Wanted objects in sha256 order, each once (the first listing of it), a page at a time. */
  *wanted(): Generator<Wanted[]> {
    this.indexWanted();
    const page = this.db.prepare('SELECT sha, size, path FROM wanted WHERE sha > ? ORDER BY sha, rowid LIMIT ?');
    let last: Buffer = Buffer.alloc(0);
    for (;;) {
      const rows = page.all(last, PAGE) as { sha: Buffer; size: number; path: string }[];
      if (rows.length === 0) return;
      const out: Wanted[] = [];
      for (const r of rows)
        if (!r.sha.equals(last)) out.push({ sha256: hex((last = r.sha)), size: r.size, path: r.path });
      yield out;
    }
  }

  /** Counts of missing objects: in packs, and to be read alone. */
  missingCounts(): { packed: number; alone: number } {
    this.flush();
    const count = (t: string) => (this.db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
    return { packed: count('missing'), alone: count('alone') };
  }

  /** Missing packed objects by pack and offset, a page at a time. */
  *missingPacked(): Generator<MissingPacked[]> {
    this.flush();
    this.db.exec('CREATE INDEX IF NOT EXISTS missing_at ON missing (pack, offset)');
    const page = this.db.prepare(
      'SELECT rowid AS id, sha, size, path, pack, offset, length FROM missing WHERE (pack, offset, rowid) > (?, ?, ?) ORDER BY pack, offset, rowid LIMIT ?',
    );
    let after = [-1, -1, -1];
    for (;;) {
      const rows = page.all(...after, PAGE) as (MissingPacked & { id: number; sha: Buffer })[];
      if (rows.length === 0) return;
      const last = rows[rows.length - 1];
      after = [last.pack, last.offset, last.id];
      yield rows.map((r) => ({
        sha256: hex(r.sha),
        size: r.size,
        path: r.path,
        pack: r.pack,
        offset: r.offset,
        length: r.length,
      }));
    }
  }

  /** Missing objects read alone, a page at a time (what is added meanwhile comes in later pages). */
  *alone(): Generator<Wanted[]> {
    this.flush();
    const page = this.db.prepare(
      'SELECT rowid AS id, sha, size, path FROM alone WHERE rowid > ? ORDER BY rowid LIMIT ?',
    );
    let after = 0;
    for (;;) {
      const rows = page.all(after, PAGE) as { id: number; sha: Buffer; size: number; path: string }[];
      if (rows.length === 0) return;
      after = rows[rows.length - 1].id;
      yield rows.map((r) => ({ sha256: hex(r.sha), size: r.size, path: r.path }));
    }
  }

  /** Inserts run in transactions of BATCH rows; a read flushes what is queued. */
  private queue(insert: () => void): void {
    this.pending.push(insert);
    if (this.pending.length >= BATCH) this.flush();
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.packedQueued = false;
    this.db.transaction(() => {
      for (const insert of batch) insert();
    })();
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
