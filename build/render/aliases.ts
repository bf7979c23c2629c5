// The alias maps the edge function resolves names with, sharded by key (contract/shards.ts). Keys
// are lower-cased, so any case works:
//   genes:    symbol, gene id, versioned gene id → gene id (a symbol shared by several genes maps to
//             the sorted list of their ids, which the edge answers with 409 and the choices);
//   isoforms: transcript id, unversioned ENST id, transcript name → transcript id.
// A gene id always wins over a symbol spelled the same; any other clash is a build error.
// Every key goes to a scratch table first, in the release's key order (the order that decides which
// id wins and which clash is reported), and the shards are written from it one at a time.
import { treePaths } from '../../edge/contract/tree.js';
import { shardCountFor } from '../../edge/contract/shards.js';
import type { Db } from '../release-db/database.js';
import { bucketOf, type Scratch } from './scratch.js';
import type { TreeWriter } from './tree-writer.js';
import { writeShardedRows } from './sharded-table.js';

/** How a key names a gene: as its symbol, or as one of its ids (which wins). */
const SYMBOL = 0;
const ID = 1;

function spillGeneKeys(db: Db, scratch: Scratch): void {
  scratch.db.exec(
    'CREATE TABLE gene_alias (seq INTEGER PRIMARY KEY, bucket INTEGER NOT NULL, key TEXT NOT NULL, gene_id TEXT NOT NULL, kind INTEGER NOT NULL)',
  );
  const rows = scratch.spill('INSERT INTO gene_alias (bucket, key, gene_id, kind) VALUES (?, ?, ?, ?)');
  const add = (key: string, geneId: string, kind: number) => {
    const k = key.toLowerCase();
    rows.add(bucketOf(k), k, geneId, kind);
  };
  const genes = db
    .prepare('SELECT gene_id, gene_id_versioned, symbol FROM genes ORDER BY gene_id')
    .raw()
    .iterate() as Iterable<[string, string | null, string]>;
  for (const [geneId, versioned, symbol] of genes) {
    add(symbol, geneId, SYMBOL);
    add(geneId, geneId, ID);
    if (versioned) add(versioned, geneId, ID);
  }
  rows.flush();
}

/** Each gene key with what it names, in shard order: the last gene whose id it is, else the gene
 * whose symbol it is, or the sorted ids of every gene with that symbol. */
function* geneKeys(scratch: Scratch, count: number): Iterable<[number, string, string | string[]]> {
  const rows = scratch.db
    .prepare('SELECT bucket & ? AS shard, key, gene_id, kind FROM gene_alias ORDER BY shard, key, seq')
    .raw()
    .iterate(count - 1) as Iterable<[number, string, string, number]>;
  interface Key {
    shard: number;
    key: string;
    id: string | null;
    symbolOf: string[];
  }
  let current: Key | undefined;
  const resolved = (c: Key): [number, string, string | string[]] => [
    c.shard,
    c.key,
    c.id ?? (c.symbolOf.length === 1 ? c.symbolOf[0] : [...c.symbolOf].sort()),
  ];
  for (const [shard, key, geneId, kind] of rows) {
    if (current?.key !== key) {
      if (current) yield resolved(current);
      current = { shard, key, id: null, symbolOf: [] };
    }
    if (kind === ID) current.id = geneId;
    else current.symbolOf.push(geneId);
  }
  if (current) yield resolved(current);
}

function spillIsoformKeys(db: Db, scratch: Scratch): void {
  scratch.db.exec(
    'CREATE TABLE isoform_alias (seq INTEGER PRIMARY KEY, bucket INTEGER NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, transcript_id TEXT NOT NULL, what TEXT NOT NULL)',
  );
  const rows = scratch.spill(
    'INSERT INTO isoform_alias (bucket, key, name, transcript_id, what) VALUES (?, ?, ?, ?, ?)',
  );
  const add = (name: string, transcriptId: string, what: string) => {
    const k = name.toLowerCase();
    rows.add(bucketOf(k), k, name, transcriptId, what);
  };
  const isoforms = db
    .prepare(
      `SELECT i.transcript_id, i.transcript_id_unversioned, i.transcript_name
       FROM isoforms i JOIN genes g USING (gene_id) ORDER BY i.transcript_id`,
    )
    .raw()
    .iterate() as Iterable<[string, string | null, string]>;
  for (const [transcriptId, unversioned, name] of isoforms) {
    add(transcriptId, transcriptId, 'id');
    if (unversioned) add(unversioned, transcriptId, 'unversioned id');
    add(name, transcriptId, 'name');
  }
  rows.flush();
}

/** The number of distinct isoform keys; throws on the first (in the release's order) key that names
 * two isoforms. */
function checkIsoformKeys(scratch: Scratch): number {
  const { keys, clashes } = scratch.db
    .prepare(
      `SELECT count(*) AS keys, coalesce(sum(clash), 0) AS clashes
       FROM (SELECT min(transcript_id) <> max(transcript_id) AS clash FROM isoform_alias GROUP BY key)`,
    )
    .get() as { keys: number; clashes: number };
  if (clashes) {
    // The holder of a key is the isoform that named it first.
    const clash = scratch.db
      .prepare(
        `SELECT a.name, a.transcript_id, a.what, f.holder
         FROM isoform_alias a
         JOIN (SELECT key, transcript_id AS holder, min(seq) FROM isoform_alias GROUP BY key) f USING (key)
         WHERE a.transcript_id <> f.holder ORDER BY a.seq LIMIT 1`,
      )
      .get() as { name: string; transcript_id: string; what: string; holder: string };
    throw new Error(
      `isoform alias "${clash.name}" (${clash.what} of ${clash.transcript_id}) already names ${clash.holder}; isoform ids and names must not collide`,
    );
  }
  return keys;
}

/** Each isoform key with its isoform, in shard order. */
function* isoformKeys(scratch: Scratch, count: number): Iterable<[number, string, string]> {
  const rows = scratch.db
    .prepare('SELECT bucket & ? AS shard, key, transcript_id FROM isoform_alias ORDER BY shard, key')
    .raw()
    .iterate(count - 1) as Iterable<[number, string, string]>;
  let last: string | null = null;
  for (const row of rows) {
    if (row[1] === last) continue;
    last = row[1];
    yield row;
  }
}

export interface AliasShards {
  genes: number;
  isoforms: number;
}

/** Gathers both alias tables into `scratch`; returns their shard counts. Throws on a clash, so a
 * release whose names collide fails before anything is rendered. */
export function gatherAliases(db: Db, scratch: Scratch): AliasShards {
  spillGeneKeys(db, scratch);
  const genes = shardCountFor(scratch.db.prepare('SELECT count(DISTINCT key) FROM gene_alias').pluck().get() as number);
  spillIsoformKeys(db, scratch);
  return { genes, isoforms: shardCountFor(checkIsoformKeys(scratch)) };
}

/** Writes both alias tables that gatherAliases gathered; returns their shard counts for
 * edge/index.json. */
export async function renderAliases(w: TreeWriter, scratch: Scratch, shards: AliasShards): Promise<AliasShards> {
  return {
    genes: await writeShardedRows(w, shards.genes, geneKeys(scratch, shards.genes), treePaths.geneAliases),
    isoforms: await writeShardedRows(
      w,
      shards.isoforms,
      isoformKeys(scratch, shards.isoforms),
      treePaths.isoformAliases,
    ),
  };
}
