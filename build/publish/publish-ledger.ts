// What a publish counts, kept on disk rather than in memory (publish.ts): the tree's files, the
// objects the release consists of, the objects the store holds for sure, the packs and the other
// objects publish generates. A release at human scale lists over a million files, and the store's
// kept releases more; as JavaScript maps and sets they make publish's memory grow with the release.
// Here they are rows of a scratch SQLite file (scratch-database.ts, removed when the run ends), the
// set logic (distinct objects, what the store lacks) is SQL, and everything is read back in pages
// in a fixed order, so publish holds a shard's entries, a pack's bodies and a page at a time.
import type Database from 'better-sqlite3';
import { contentTypeOf, type ManifestEntry } from '../../edge/contract/tree.js';
import type { ShardRef } from '../../edge/contract/manifest.js';
import { parsePackIndex, type PackRef } from '../../edge/contract/packs.js';
import { openScratchDatabase, type ScratchDatabase } from '../common/scratch-database.js';
import type { EarlierPacksSink, Pack } from './packing.js';
import type { Paged } from './tree-check.js';

/** An object of the release: a shard object of the published manifest, or a file of the tree (at
 * the first path, in path order, listing its bytes). */
export interface LedgerObject {
  sha256: string;
  size: number;
  path: string;
  content_type: string;
  kind: 'shard' | 'file';
}

/** An object publish writes that is in no tree: manifest.json, the pack list, a pack's index. */
export interface GeneratedObject {
  sha256: string;
  size: number;
  path: string;
  content_type: string;
  kind: 'generated';
}

/** What the encoding learnt of one shard of the current release against the tree's (manifest-
 * encoding.ts): its head and chain, and, when the tree's shard differs, the delta that would say so. */
export interface ShardPlan {
  shard: number;
  head: ManifestEntry;
  bases: ShardRef[];
  changed: boolean;
  delta: ShardRef | null;
}

/** Rows read back per page. */
const PAGE = 2048;

/** Bytes of manifest objects kept in memory: a small release's all, a large one's first (the rest
 * are written to the file, where reading them back costs a copy). */
const BODY_BYTES = 32 * 1024 * 1024;

/** The tree's files recorded per statement. */
const TREE_ROWS = 64;

/** Files of the tree's shards kept parsed as well, for the encoding to compare with the current
 * release's without reading them back (a bounded number: a large release's other shards are read
 * back from the ledger). */
const TREE_SHARD_CACHE_FILES = 65_536;

export class PublishLedger {
  private readonly scratch: ScratchDatabase;
  private readonly db: Database.Database;
  private readonly stmt: Record<string, Database.Statement>;
  /** Tree shards as recorded, parsed (TREE_SHARD_CACHE_FILES); null: recorded, but not kept here. */
  private readonly treeShards = new Map<number, readonly ManifestEntry[] | null>();
  private treeShardFiles = 0;
  /** The manifest (its sha256) whose every shard head's listing is recorded (recordHead), read whole. */
  private recordedManifest: string | null = null;
  /** Bytes of manifest objects kept in memory (keepBody), and their total. */
  private readonly bodies = new Map<string, Buffer>();
  private bodyBytes = 0;
  /** A body went to the file (keepBody). */
  private bodiesSpilled = false;

  /** `bodyBytes`: how many bytes of manifest objects are kept in memory (BODY_BYTES). */
  constructor(private readonly opts: { bodyBytes?: number } = {}) {
    this.scratch = openScratchDatabase('publish');
    this.db = this.scratch.db;
    try {
      this.db.function('content_type_of', { deterministic: true }, (path) => contentTypeOf(String(path)));
      this.db.exec(`
        -- Every file the tree's manifest lists, as its shard lists it. A path belongs to one shard (its
        -- hash says which: the manifest reader checks), so (shard, path) finds a path listed twice; no
        -- other index is kept up while the rows go in.
        CREATE TABLE tree_files (shard INTEGER NOT NULL, path TEXT NOT NULL, sha TEXT NOT NULL,
          size INTEGER NOT NULL, content_type TEXT, PRIMARY KEY (shard, path)) WITHOUT ROWID;
        -- Bytes of manifest objects at hand (the store's, the encoding's), by sha256.
        CREATE TABLE bodies (sha TEXT PRIMARY KEY, body BLOB NOT NULL);
        -- The tree's own manifest objects (its shard objects): where they are in the tree.
        CREATE TABLE tree_objects (sha TEXT PRIMARY KEY, path TEXT NOT NULL) WITHOUT ROWID;
        -- What a shard head of the current release (or of the tree) lists (its bases and files), in
        -- its order (k): a head's rows go in together, with no other index to keep up.
        CREATE TABLE head_lists (head TEXT NOT NULL, from_tree INTEGER NOT NULL, k INTEGER NOT NULL,
          sha TEXT NOT NULL, PRIMARY KEY (head, from_tree, k)) WITHOUT ROWID;
        CREATE TABLE shard_plans (shard INTEGER PRIMARY KEY, head TEXT NOT NULL, bases TEXT NOT NULL,
          changed INTEGER NOT NULL, delta TEXT);
        -- The published manifest's shard objects, in the order it names them (k within a shard).
        CREATE TABLE manifest_objects (shard INTEGER NOT NULL, k INTEGER NOT NULL, sha TEXT NOT NULL,
          size INTEGER NOT NULL, path TEXT NOT NULL, PRIMARY KEY (shard, k));
        -- What the store holds for sure, and one release's listing before it counts.
        CREATE TABLE known (sha TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE TABLE listing (sha TEXT PRIMARY KEY) WITHOUT ROWID;
        -- What a listing of the store found.
        CREATE TABLE store_objects (sha TEXT PRIMARY KEY) WITHOUT ROWID;
        CREATE TABLE store_packs (sha TEXT PRIMARY KEY) WITHOUT ROWID;
        -- The release's distinct objects: shard objects first, then files in path order.
        CREATE TABLE objects (ord INTEGER PRIMARY KEY, sha TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,
          path TEXT NOT NULL, content_type TEXT NOT NULL, kind TEXT NOT NULL,
          missing INTEGER NOT NULL DEFAULT 0, pending INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX objects_pending ON objects (pending, ord);
        -- The pack list, in its order; build: this publish uploads the pack.
        CREATE TABLE packs (ord INTEGER PRIMARY KEY, sha TEXT NOT NULL UNIQUE, ref TEXT NOT NULL,
          index_sha TEXT NOT NULL, build INTEGER NOT NULL, buildable INTEGER NOT NULL);
        -- The objects of a pack to build, in its order (read from its index when first asked for).
        CREATE TABLE pack_members (pack INTEGER NOT NULL, k INTEGER NOT NULL, sha TEXT NOT NULL,
          offset INTEGER NOT NULL, length INTEGER NOT NULL, PRIMARY KEY (pack, k)) WITHOUT ROWID;
        -- One kept release's packs, while its pack list is read (earlierPacks).
        CREATE TABLE staged_packs (ord INTEGER PRIMARY KEY, sha TEXT NOT NULL, ref TEXT NOT NULL,
          index_sha TEXT NOT NULL, index_body BLOB NOT NULL, holds INTEGER NOT NULL, buildable INTEGER NOT NULL);
        CREATE TABLE generated (ord INTEGER PRIMARY KEY, sha TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,
          path TEXT NOT NULL, body BLOB NOT NULL);
      `);
      const prepare = (sql: string) => this.db.prepare(sql);
      this.stmt = {
        treeFile: prepare(
          'INSERT OR IGNORE INTO tree_files (path, shard, sha, size, content_type) VALUES (?, ?, ?, ?, ?)',
        ),
        treeFiles: prepare(
          `INSERT OR IGNORE INTO tree_files (path, shard, sha, size, content_type) VALUES ${Array(TREE_ROWS).fill('(?, ?, ?, ?, ?)').join(', ')}`,
        ),
        treeShard: prepare('SELECT path, size, sha, content_type FROM tree_files WHERE shard = ? ORDER BY path').raw(),
        body: prepare('INSERT OR IGNORE INTO bodies (sha, body) VALUES (?, ?)'),
        getBody: prepare('SELECT body FROM bodies WHERE sha = ?').pluck(),
        treeObject: prepare('INSERT OR IGNORE INTO tree_objects (sha, path) VALUES (?, ?)'),
        treeObjectPath: prepare('SELECT path FROM tree_objects WHERE sha = ?').pluck(),
        // A head listed again (two shards of the same bytes) lists the same.
        headList: prepare(
          'INSERT INTO head_lists (head, from_tree, k, sha) SELECT ?, ?, key, value FROM json_each(?) WHERE true ON CONFLICT DO NOTHING',
        ),
        hasHead: prepare('SELECT 1 FROM head_lists WHERE head = ? LIMIT 1').pluck(),
        getPlan: prepare('SELECT head, bases, changed, delta FROM shard_plans WHERE shard = ?'),
        plan: prepare('INSERT OR REPLACE INTO shard_plans (shard, head, bases, changed, delta) VALUES (?, ?, ?, ?, ?)'),
        manifestObject: prepare('INSERT INTO manifest_objects (shard, k, sha, size, path) VALUES (?, ?, ?, ?, ?)'),
        know: prepare('INSERT OR IGNORE INTO known (sha) VALUES (?)'),
        isKnown: prepare('SELECT 1 FROM known WHERE sha = ?').pluck(),
        list: prepare('INSERT OR IGNORE INTO listing (sha) VALUES (?)'),
        listHead: prepare('INSERT OR IGNORE INTO listing (sha) SELECT sha FROM head_lists WHERE head = ?'),
        storeObject: prepare('INSERT OR IGNORE INTO store_objects (sha) VALUES (?)'),
        storePack: prepare('INSERT OR IGNORE INTO store_packs (sha) VALUES (?)'),
        object: prepare('SELECT sha AS sha256, size, path, content_type, kind FROM objects WHERE sha = ?'),
        pack: prepare('INSERT OR IGNORE INTO packs (sha, ref, index_sha, build, buildable) VALUES (?, ?, ?, ?, ?)'),
        generate: prepare('INSERT OR IGNORE INTO generated (sha, size, path, body) VALUES (?, ?, ?, ?)'),
        generatedBody: prepare('SELECT body FROM generated WHERE sha = ?').pluck(),
      };
    } catch (err) {
      this.scratch.remove();
      throw err;
    }
  }

  /** Closes the ledger and removes its scratch file. */
  close(): void {
    this.scratch.remove();
  }

  private inTransaction(work: () => void): void {
    this.db.transaction(work)();
  }

  private count(sql: string, ...params: unknown[]): number {
    return this.db
      .prepare(sql)
      .pluck()
      .get(...params) as number;
  }

  /** Rows of `sql` (which takes the last key read and a page size, and orders by that key) a page
   * at a time. */
  private *pages<T>(sql: string, key: (row: T) => number | string, start: number | string, params: unknown[] = []) {
    const page = this.db.prepare(sql);
    let after = start;
    for (;;) {
      const rows = page.all(...params, after, PAGE) as T[];
      if (!rows.length) return;
      after = key(rows.at(-1)!);
      yield rows;
    }
  }

  // The tree.

  /** Records a shard of the tree's files; returns a path listed before, if any (the manifest is
   * refused then, and the rest of the shard is not recorded). */
  addTreeShard(shard: number, entries: readonly ManifestEntry[]): string | null {
    const seen = this.treeShards.has(shard);
    let twice: string | null = null;
    this.inTransaction(() => {
      let from = 0;
      if (!seen) {
        // A shard's first rows: a path listed twice is among them, found here, and the rows before it
        // go in TREE_ROWS at a time (one statement's call and bindings for all of them).
        const paths = new Set<string>();
        let end = entries.length;
        for (let i = 0; i < entries.length && end === entries.length; i++) {
          if (paths.has(entries[i].path)) end = i;
          else paths.add(entries[i].path);
        }
        for (; from + TREE_ROWS <= end; from += TREE_ROWS) {
          const values: unknown[] = [];
          for (let j = from; j < from + TREE_ROWS; j++) {
            const e = entries[j];
            values.push(e.path, shard, e.sha256, e.size, e.content_type ?? null);
          }
          this.stmt.treeFiles.run(values);
        }
      }
      // The rest one by one: those of a shard recorded before are checked against it as they go in.
      for (; from < entries.length; from++) {
        const e = entries[from];
        if (this.stmt.treeFile.run(e.path, shard, e.sha256, e.size, e.content_type ?? null).changes === 0) {
          twice = e.path;
          return;
        }
      }
    });
    // Kept parsed when this is all the shard lists and the budget allows.
    const keep = twice === null && !seen && this.treeShardFiles + entries.length <= TREE_SHARD_CACHE_FILES;
    this.treeShards.set(shard, keep ? entries : null);
    if (keep) this.treeShardFiles += entries.length;
    return twice;
  }

  /** Shard `shard` of the tree's files, sorted by path. */
  treeShard(shard: number): readonly ManifestEntry[] {
    const kept = this.treeShards.get(shard);
    if (kept) return kept;
    // In the members' order the build writes them (build/render/manifest.ts), as a delta lists them.
    return (this.stmt.treeShard.all(shard) as [string, number, string, string | null][]).map(
      ([path, size, sha256, content_type]) =>
        (content_type === null ? { path, size, sha256 } : { path, size, sha256, content_type }) as ManifestEntry,
    );
  }

  // Bytes of manifest objects.

  /** Keeps the bytes of a manifest object (the first kept for a sha256 stays): in memory while they
   * fit the budget, in the file beyond. */
  keepBody(sha: string, body: Buffer): void {
    if (this.bodies.has(sha)) return;
    // Once one has gone to the file, all later ones do: a sha256 there is never kept again in memory.
    if (!this.bodiesSpilled && this.bodyBytes + body.length <= (this.opts.bodyBytes ?? BODY_BYTES)) {
      this.bodies.set(sha, body);
      this.bodyBytes += body.length;
    } else {
      this.bodiesSpilled = true;
      this.stmt.body.run(sha, body);
    }
  }

  body(sha: string): Buffer | null {
    return this.bodies.get(sha) ?? (this.stmt.getBody.get(sha) as Buffer | undefined) ?? null;
  }

  /** Records where a manifest object of the tree itself is (its bytes stay in the tree). */
  treeObject(sha: string, path: string): void {
    this.stmt.treeObject.run(sha, path);
  }

  /** Where a manifest object of the tree is, or null for any other object. */
  treeObjectPath(sha: string): string | null {
    return (this.stmt.treeObjectPath.get(sha) as string | undefined) ?? null;
  }

  // The current release's shards.

  /** Records what shard head `head` lists (its bases and files), of the tree or the current release. */
  recordHead(head: string, shas: readonly string[], fromTree = false): void {
    this.stmt.headList.run(head, fromTree ? 1 : 0, JSON.stringify(shas));
  }

  /** Every shard head of the store's manifest `manifestSha` (not the tree's) has its listing recorded
   * (recordHead): it was read whole. */
  recordedWhole(manifestSha: string): void {
    this.recordedManifest = manifestSha;
  }

  /** Counts what the manifest recorded whole lists (its shards' heads, their bases and files) as held
   * by the store, in one sorted pass; false when `manifestSha` is not that manifest. */
  knowRecorded(manifestSha: string, heads: readonly string[]): boolean {
    if (manifestSha !== this.recordedManifest) return false;
    this.know([manifestSha, ...heads]);
    // In key order, so that each row goes in at the end of the index.
    this.db.exec('INSERT OR IGNORE INTO known (sha) SELECT sha FROM head_lists WHERE from_tree = 0 ORDER BY sha');
    return true;
  }

  hasHead(head: string): boolean {
    return this.stmt.hasHead.get(head) !== undefined;
  }

  recordPlan(plan: ShardPlan): void {
    this.stmt.plan.run(
      plan.shard,
      JSON.stringify(plan.head),
      JSON.stringify(plan.bases),
      plan.changed ? 1 : 0,
      plan.delta ? JSON.stringify(plan.delta) : null,
    );
  }

  /** The plan recorded for a shard, if any. */
  plan(shard: number): ShardPlan | null {
    const r = this.stmt.getPlan.get(shard) as
      | { head: string; bases: string; changed: number; delta: string | null }
      | undefined;
    if (!r) return null;
    return {
      shard,
      head: JSON.parse(r.head) as ManifestEntry,
      bases: JSON.parse(r.bases) as ShardRef[],
      changed: r.changed === 1,
      delta: r.delta === null ? null : (JSON.parse(r.delta) as ShardRef),
    };
  }

  /** The shards whose plan says they changed, each with the length of its current chain. */
  changedShards(): { shard: number; depth: number }[] {
    return this.db
      .prepare('SELECT shard, json_array_length(bases) AS depth FROM shard_plans WHERE changed = 1 ORDER BY shard')
      .all() as { shard: number; depth: number }[];
  }

  /** Forgets the current release's shards (it could not be read whole). */
  forgetCurrentRelease(): void {
    this.recordedManifest = null;
    this.db.exec('DELETE FROM shard_plans; DELETE FROM head_lists WHERE from_tree = 0;');
  }

  // The published manifest's shard objects.

  /** Records the objects shard `shard` of the published manifest names, in order (head first). */
  addManifestObjects(shard: number, entries: readonly ManifestEntry[]): void {
    this.inTransaction(() => {
      entries.forEach((e, k) => this.stmt.manifestObject.run(shard, k, e.sha256, e.size, e.path));
    });
  }

  clearManifestObjects(): void {
    this.db.exec('DELETE FROM manifest_objects');
  }

  // What the store holds for sure.

  know(shas: Iterable<string>): void {
    this.inTransaction(() => {
      for (const sha of shas) this.stmt.know.run(sha);
    });
  }

  isKnown(sha: string): boolean {
    return this.stmt.isKnown.get(sha) !== undefined;
  }

  /** Starts a release's listing: what it lists counts (`countListing`) only once all of it was read. */
  startListing(): void {
    this.db.exec('DELETE FROM listing');
  }

  list(shas: Iterable<string>): void {
    this.inTransaction(() => {
      for (const sha of shas) this.stmt.list.run(sha);
    });
  }

  /** Lists what a recorded head lists (recordHead). */
  listHead(head: string): void {
    this.stmt.listHead.run(head);
  }

  /** Lists what shard `shard` of the tree lists. */
  listTreeShard(shard: number): void {
    this.db.prepare('INSERT OR IGNORE INTO listing (sha) SELECT sha FROM tree_files WHERE shard = ?').run(shard);
  }

  countListing(): void {
    this.db.exec('INSERT OR IGNORE INTO known (sha) SELECT sha FROM listing');
  }

  // What a listing of the store found.

  clearStoreListing(): void {
    this.db.exec('DELETE FROM store_objects; DELETE FROM store_packs;');
  }

  listedInStore(kind: 'object' | 'pack', shas: Iterable<string>): void {
    const insert = kind === 'object' ? this.stmt.storeObject : this.stmt.storePack;
    this.inTransaction(() => {
      for (const sha of shas) insert.run(sha);
    });
  }

  // The release's objects.

  /** Fixes the release's distinct objects, once the manifest's are recorded: its shard objects in the
   * order the manifest names them (each once), then every other file, in path order, at the first
   * path listing its bytes. */
  fixObjects(): void {
    this.db.exec(`
      INSERT INTO objects (ord, sha, size, path, content_type, kind)
        SELECT row_number() OVER (ORDER BY shard, k), sha, size, path, content_type_of(path), 'shard'
        FROM (SELECT *, row_number() OVER (PARTITION BY sha ORDER BY shard, k) AS nth FROM manifest_objects)
        WHERE nth = 1 ORDER BY shard, k;
      -- In path order, each sha's first row goes in and its others are not (sha is unique), so each
      -- file is at its first path; ord, left out, numbers them on from the shard objects.
      INSERT INTO objects (sha, size, path, content_type, kind)
        SELECT sha, size, path, coalesce(content_type, content_type_of(path)), 'file' FROM tree_files
        WHERE true ORDER BY path
        ON CONFLICT (sha) DO NOTHING;
    `);
  }

  /** Marks the objects the store does not hold for sure now as missing: those publish uploads. */
  markMissing(): void {
    // Only the rows that change are written (a small release change marks few).
    this.db.exec(`
      UPDATE objects SET missing = 0 WHERE missing = 1;
      UPDATE objects SET missing = 1 WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.sha = objects.sha);`);
  }

  missingCount(kind?: LedgerObject['kind']): number {
    return kind
      ? this.count('SELECT count(*) FROM objects WHERE missing = 1 AND kind = ?', kind)
      : this.count('SELECT count(*) FROM objects WHERE missing = 1');
  }

  object(sha: string): LedgerObject | undefined {
    return this.stmt.object.get(sha) as LedgerObject | undefined;
  }

  objectCount(kind?: LedgerObject['kind']): number {
    return kind
      ? this.count('SELECT count(*) FROM objects WHERE kind = ?', kind)
      : this.count('SELECT count(*) FROM objects');
  }

  /** The release's objects, in order, a page at a time: all, or those of a kind; `missing`: only
   * those the store lacked when the objects were fixed (fixObjects); `unknown`: only those the store
   * does not hold for sure now. */
  objects(o: { kind?: LedgerObject['kind']; missing?: boolean; unknown?: boolean } = {}): Generator<LedgerObject[]> {
    const where = [
      o.kind ? `kind = '${o.kind === 'shard' ? 'shard' : 'file'}'` : null,
      o.missing ? 'missing = 1' : null,
      o.unknown ? 'NOT EXISTS (SELECT 1 FROM known k WHERE k.sha = objects.sha)' : null,
    ].filter(Boolean);
    return this.objectPages(where.join(' AND '));
  }

  private objectPages(where: string): Generator<LedgerObject[]> {
    return this.pages<LedgerObject & { ord: number }>(
      `SELECT ord, sha AS sha256, size, path, content_type, kind FROM objects WHERE ${where ? `${where} AND ` : ''}ord > ? ORDER BY ord LIMIT ?`,
      (r) => r.ord,
      0,
    );
  }

  /** Marks what this publish uploads as pending: the objects the store does not hold for sure, nor
   * did a listing of it find. Returns how many. */
  markPending(): number {
    this.db.exec(`
      UPDATE objects SET pending = 0 WHERE pending = 1;
      UPDATE objects SET pending = 1 WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.sha = objects.sha)
        AND NOT EXISTS (SELECT 1 FROM store_objects s WHERE s.sha = objects.sha);`);
    return this.pendingCount();
  }

  pendingCount(kind?: LedgerObject['kind']): number {
    return kind
      ? this.count('SELECT count(*) FROM objects WHERE pending = 1 AND kind = ?', kind)
      : this.count('SELECT count(*) FROM objects WHERE pending = 1');
  }

  /** The objects still pending, in order, a page at a time: all, or those of a kind. */
  pendingObjects(kind?: LedgerObject['kind']): Generator<LedgerObject[]> {
    return this.objectPages(`pending = 1${kind ? ` AND kind = '${kind === 'shard' ? 'shard' : 'file'}'` : ''}`);
  }

  /** These objects went up: pending no more. */
  uploaded(kind: LedgerObject['kind']): void {
    this.db.prepare('UPDATE objects SET pending = 0 WHERE pending = 1 AND kind = ?').run(kind);
  }

  /** What the tree check reads, in order: every missing object (a new release's packs are cut from
   * them), or, when the release keeps the packs its manifest names (`keptPacks`), the files this
   * publish uploads and those of the packs it builds. */
  toCheck(keptPacks: boolean): Paged<LedgerObject> {
    let where = 'missing = 1';
    if (keptPacks) {
      where = `kind = 'file' AND (pending = 1 OR sha IN (SELECT m.sha FROM pack_members m JOIN packs p ON p.ord = m.pack WHERE p.build = 1))`;
      for (const p of this.db.prepare('SELECT ord FROM packs WHERE build = 1').pluck().all() as number[])
        this.fillMembers(p);
    }
    return {
      count: this.count(`SELECT count(*) FROM objects WHERE ${where}`),
      pages: () => this.objectPages(where),
    };
  }

  /** The release's objects (generated ones included) the last listing of the store did not find:
   * manifest.json first, then the shard objects, the other generated objects and the files. */
  *lostObjects(manifestSha: string): Generator<(LedgerObject | GeneratedObject)[]> {
    const lost = (table: string) => `NOT EXISTS (SELECT 1 FROM store_objects s WHERE s.sha = ${table}.sha)`;
    const generated = (where: string) =>
      this.pages<GeneratedObject & { ord: number }>(
        `SELECT ord, sha AS sha256, size, path, 'application/json' AS content_type, 'generated' AS kind FROM generated
         WHERE ${lost('generated')} AND ${where} AND ord > ? ORDER BY ord LIMIT ?`,
        (r) => r.ord,
        0,
        [manifestSha],
      );
    yield* generated('sha = ?');
    yield* this.objectPages(`kind = 'shard' AND ${lost('objects')}`);
    yield* generated('sha <> ?');
    yield* this.objectPages(`kind = 'file' AND ${lost('objects')}`);
  }

  lostCount(): number {
    return (
      this.count(
        'SELECT count(*) FROM objects WHERE NOT EXISTS (SELECT 1 FROM store_objects s WHERE s.sha = objects.sha)',
      ) +
      this.count(
        'SELECT count(*) FROM generated WHERE NOT EXISTS (SELECT 1 FROM store_objects s WHERE s.sha = generated.sha)',
      )
    );
  }

  // Packs and generated objects.

  /** Appends a pack to the pack list (a pack listed already keeps its place) and its index to the
   * generated objects; `build`: this publish uploads it. Whether every object it holds is the
   * release's is recorded (only those can be built again from the tree). */
  addPack(pack: Pack, build: boolean, buildable = pack.index.objects.every(([sha]) => this.isObject(sha))): void {
    this.inTransaction(() => {
      const added = this.stmt.pack.run(
        pack.ref.sha256,
        JSON.stringify(pack.ref),
        pack.ref.index.sha256,
        build ? 1 : 0,
        buildable ? 1 : 0,
      );
      if (added.changes) this.generate(pack.indexBody, pack.ref.index.sha256, `index of pack ${pack.ref.sha256}`);
    });
  }

  /** Where earlierPacks puts a kept release's packs: staged, and only once its whole pack list was
   * read are its list and indexes known to be in the store and the packs holding an object of this
   * release appended to the pack list. */
  earlierPacksSink(): EarlierPacksSink {
    const stage = this.db.prepare(
      'INSERT INTO staged_packs (sha, ref, index_sha, index_body, holds, buildable) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const isObject = (sha: string) => this.isObject(sha);
    return {
      start: () => this.db.exec('DELETE FROM staged_packs'),
      pack: (p) =>
        void stage.run(
          p.ref.sha256,
          JSON.stringify(p.ref),
          p.ref.index.sha256,
          p.indexBody,
          p.index.objects.some(([sha]) => isObject(sha)) ? 1 : 0,
          p.index.objects.every(([sha]) => isObject(sha)) ? 1 : 0,
        ),
      count: (listSha) =>
        this.inTransaction(() => {
          this.stmt.know.run(listSha);
          this.db.exec(`
            INSERT OR IGNORE INTO known (sha) SELECT index_sha FROM staged_packs;
            INSERT OR IGNORE INTO generated (sha, size, path, body)
              SELECT index_sha, length(index_body), 'index of pack ' || sha, index_body FROM staged_packs
              WHERE holds = 1 AND NOT EXISTS (SELECT 1 FROM packs p WHERE p.sha = staged_packs.sha) ORDER BY ord;
            INSERT OR IGNORE INTO packs (sha, ref, index_sha, build, buildable)
              SELECT sha, ref, index_sha, 0, buildable FROM staged_packs WHERE holds = 1 ORDER BY ord;
            DELETE FROM staged_packs;
          `);
        }),
    };
  }

  /** The pack list's and its indexes' objects are in the store (the list was read from it). */
  knowPackIndexes(): void {
    this.db.exec('INSERT OR IGNORE INTO known (sha) SELECT index_sha FROM packs');
  }

  /** Marks the buildable packs the last store listing did not find to be built (uploaded). */
  buildUnlisted(): void {
    this.db.exec(
      'UPDATE packs SET build = (buildable = 1 AND NOT EXISTS (SELECT 1 FROM store_packs s WHERE s.sha = packs.sha))',
    );
  }

  private isObject(sha: string): boolean {
    return this.stmt.object.get(sha) !== undefined;
  }

  /** The packs to build, in the pack list's order. */
  packsToBuild(): { ord: number; ref: PackRef }[] {
    return (
      this.db.prepare('SELECT ord, ref FROM packs WHERE build = 1 ORDER BY ord').all() as { ord: number; ref: string }[]
    ).map((r) => ({ ord: r.ord, ref: JSON.parse(r.ref) as PackRef }));
  }

  /** The objects of a pack to build, in its order, each where it goes in the pack and whether this
   * publish uploads it too. */
  packMembers(pack: number): (LedgerObject & { offset: number; pending: boolean })[] {
    this.fillMembers(pack);
    return (
      this.db
        .prepare(
          `SELECT o.sha AS sha256, m.length AS size, o.path, o.content_type, o.kind, o.pending, m.offset
           FROM pack_members m JOIN objects o ON o.sha = m.sha WHERE m.pack = ? ORDER BY m.k`,
        )
        .all(pack) as (LedgerObject & { offset: number; pending: number })[]
    ).map((r) => ({ ...r, pending: r.pending === 1 }));
  }

  /** The objects of a pack went up with it: pending no more. */
  packUploaded(pack: number): void {
    this.db
      .prepare(
        'UPDATE objects SET pending = 0 WHERE pending = 1 AND sha IN (SELECT sha FROM pack_members WHERE pack = ?)',
      )
      .run(pack);
  }

  /** Records a pack's objects from its index, once. */
  private fillMembers(pack: number): void {
    if (this.db.prepare('SELECT 1 FROM pack_members WHERE pack = ? LIMIT 1').get(pack)) return;
    const r = this.db
      .prepare('SELECT p.ref, g.body FROM packs p JOIN generated g ON g.sha = p.index_sha WHERE p.ord = ?')
      .get(pack) as { ref: string; body: Buffer };
    const ref = JSON.parse(r.ref) as PackRef;
    const index = parsePackIndex(r.body, `the index of pack ${ref.sha256}`);
    const insert = this.db.prepare('INSERT INTO pack_members (pack, k, sha, offset, length) VALUES (?, ?, ?, ?, ?)');
    this.inTransaction(() => {
      index.objects.forEach(([sha, offset, length], k) => insert.run(pack, k, sha, offset, length));
    });
  }

  packsToBuildCount(): number {
    return this.count('SELECT count(*) FROM packs WHERE build = 1');
  }

  /** The pack list's entries, in order (a pack list names every pack: it is one object). */
  packRefs(): PackRef[] {
    return (this.db.prepare('SELECT ref FROM packs ORDER BY ord').pluck().all() as string[]).map(
      (r) => JSON.parse(r) as PackRef,
    );
  }

  /** Records an object publish writes that is in no tree (again is harmless). */
  generate(body: Buffer, sha: string, path: string): void {
    this.stmt.generate.run(sha, body.length, path, body);
  }

  generatedBody(sha: string): Buffer | null {
    return (this.stmt.generatedBody.get(sha) as Buffer | undefined) ?? null;
  }

  generatedCount(): number {
    return this.count('SELECT count(*) FROM generated');
  }

  /** The generated objects this publish uploads (those the store does not hold for sure, nor did a
   * listing of it find), in the order generated, a page at a time. */
  generatedToUpload(): Generator<GeneratedObject[]> {
    return this.pages<GeneratedObject & { ord: number }>(
      `SELECT ord, sha AS sha256, size, path, 'application/json' AS content_type, 'generated' AS kind FROM generated
       WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.sha = generated.sha)
         AND NOT EXISTS (SELECT 1 FROM store_objects s WHERE s.sha = generated.sha) AND ord > ? ORDER BY ord LIMIT ?`,
      (r) => r.ord,
      0,
    );
  }

  /** Distinct objects of the release, generated ones included. */
  totalObjects(): number {
    return this.count('SELECT count(*) FROM (SELECT sha FROM objects UNION SELECT sha FROM generated)');
  }
}
