// Writes a key → value table as hash shards (contract/shards.ts). Every shard file is written, empty
// ones too, so a reader can tell a missing file (a broken tree) from a key that is not there. The
// table comes as rows grouped by shard, so only one shard is in memory at a time.
import { shardCountFor } from '../../edge/contract/shards.js';
import type { Scratch, Spill } from './scratch.js';
import { bucketOf } from './scratch.js';
import type { TreeWriter } from './tree-writer.js';

const byKey = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/** Writes `count` shards from `rows` ([shard, key, value], in shard order); returns `count`. */
export async function writeShardedRows<T>(
  w: TreeWriter,
  count: number,
  rows: Iterable<[shard: number, key: string, value: T]>,
  pathOf: (shard: number) => string,
): Promise<number> {
  let shard = 0;
  let entries: [string, T][] = [];
  const next = async () => {
    await w.json(pathOf(shard), Object.fromEntries(entries.sort(byKey)));
    entries = [];
    shard += 1;
  };
  for (const [s, key, value] of rows) {
    while (shard < s) await next();
    entries.push([key, value]);
  }
  while (shard < count) await next();
  return count;
}

/** A table of distinct keys gathered in a scratch table, written as shards once complete. */
export class ShardedSpill<T> {
  private readonly rows: Spill;
  private size = 0;

  constructor(
    private readonly scratch: Scratch,
    private readonly table: string,
  ) {
    scratch.db.exec(`CREATE TABLE ${table} (bucket INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL)`);
    this.rows = scratch.spill(`INSERT INTO ${table} (bucket, key, value) VALUES (?, ?, ?)`);
  }

  /** Adds a key the table does not have yet. */
  add(key: string, value: T): void {
    this.rows.add(bucketOf(key), key, JSON.stringify(value));
    this.size += 1;
  }

  get keys(): number {
    return this.size;
  }

  /** Writes the shards; returns their count. */
  write(w: TreeWriter, pathOf: (shard: number) => string): Promise<number> {
    this.rows.flush();
    const count = shardCountFor(this.size);
    const rows = this.scratch.db
      .prepare(`SELECT bucket & ? AS shard, key, value FROM ${this.table} ORDER BY shard`)
      .raw()
      .iterate(count - 1) as Iterable<[number, string, string]>;
    return writeShardedRows(w, count, parsed(rows), pathOf);
  }
}

function* parsed<T>(rows: Iterable<[number, string, string]>): Iterable<[number, string, T]> {
  for (const [shard, key, value] of rows) yield [shard, key, JSON.parse(value) as T];
}
