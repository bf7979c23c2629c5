// Sharded lookup tables. A table too large for one edge instance to load whole (alias maps, the
// structure map, the manifest: hundreds of thousands of keys at human scale) is split by a hash of
// the key into a power-of-two number of shard files; a reader loads only the shard a key falls in.
// The renderer and every reader use these functions, so a key always lands in the same shard.

/** How many keys a shard aims at: small enough to fetch and parse in a few milliseconds. */
export const KEYS_PER_SHARD = 4096;
export const MAX_SHARDS = 4096;

/** FNV-1a (32-bit) over UTF-16 code units: fast, stable, and the same in every JavaScript runtime. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The smallest power of two that keeps shards at about KEYS_PER_SHARD keys (1 for small tables). */
export function shardCountFor(keys: number, perShard = KEYS_PER_SHARD): number {
  let n = 1;
  while (n < MAX_SHARDS && keys / n > perShard) n *= 2;
  return n;
}

export function shardOf(key: string, count: number): number {
  return fnv1a(key) & (count - 1);
}

/** File name of a shard: three hex digits, so names sort in shard order. */
export function shardName(shard: number): string {
  return shard.toString(16).padStart(3, '0');
}

export function isShardCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_SHARDS && (n & (n - 1)) === 0;
}
