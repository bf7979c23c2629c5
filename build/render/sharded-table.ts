// Writes a key → value table as hash shards (contract/shards.ts). Every shard file is written, empty
// ones too, so a reader can tell a missing file (a broken tree) from a key that is not there.
import { shardCountFor, shardOf } from '../../edge/contract/shards.js';
import type { TreeWriter } from './tree-writer.js';

const byKey = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/** Returns the number of shards written. */
export async function writeSharded<T>(
  w: TreeWriter,
  table: Map<string, T>,
  pathOf: (shard: number) => string,
): Promise<number> {
  const count = shardCountFor(table.size);
  const shards: [string, T][][] = Array.from({ length: count }, () => []);
  for (const entry of table) shards[shardOf(entry[0], count)].push(entry);
  for (const [i, entries] of shards.entries()) await w.json(pathOf(i), Object.fromEntries(entries.sort(byKey)));
  return count;
}
