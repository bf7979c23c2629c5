// The one parser of manifest.json and its shards, used by the edge (which serves only what the
// manifest lists), `isoatlas serve`, publish and mirror. It checks shape only; each reader checks the
// bytes against the listed sha256 with the hash function its runtime has. Manifest paths become
// local file names in a mirror, so none may point outside the tree.
//
// A shard object is full (`{"entries":[…]}`, as a rendered tree has them) or, in a published store
// since format 3, a delta: `{"entries":[added or changed],"removed":[paths],"bases":[…]}` on the
// chain of shard objects `bases` lists, nearest first, ending with a full one (build/publish/
// manifest-encoding.ts writes them, docs/ARCHITECTURE.md "Manifests that grow with the change").
// The head lists its whole chain, so a reader fetches every base in one parallel round trip; each
// base is an object of the store, checked against the sha256 the head lists for it.
import { MANIFEST_FORMAT, treePaths, type ManifestEntry, type ManifestIndex, type ManifestShard } from './tree.js';
import { isShardCount, shardOf } from './shards.js';

/** Tree paths are built from SAFE_ID identifiers: no empty, `.` or `..` segment, no absolute path. */
export const SAFE_TREE_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;
export const SHA256_HEX = /^[0-9a-f]{64}$/;

const decoder = new TextDecoder();

function validEntry(e: ManifestEntry): boolean {
  return (
    Boolean(e) &&
    typeof e.path === 'string' &&
    SAFE_TREE_PATH.test(e.path) &&
    Number.isSafeInteger(e.size) &&
    e.size >= 0 &&
    typeof e.sha256 === 'string' &&
    SHA256_HEX.test(e.sha256)
  );
}

function parse<T>(body: Uint8Array, where: string): T {
  try {
    return JSON.parse(decoder.decode(body)) as T;
  } catch (err) {
    throw new Error(`${where}: not JSON (${(err as Error).message})`);
  }
}

/** The most bytes of a shard object decoded as one string. V8 keeps a string of 128 KiB or more
 * in pages of its own, fresh each time (each page a fault): a whole shard of a large tree (about
 * 170 KB) decoded several times slower than the same bytes in pieces. */
const PIECE_BYTES = 96 * 1024;
const SHARD_START = new TextEncoder().encode('{"entries":[');
/** Between two entries. A `"` inside a JSON string is escaped, so these bytes stand only between
 * two objects of an array; a cut anywhere but in `entries` leaves a piece that does not parse. */
const NEXT_ENTRY = new TextEncoder().encode('},{"path":');

/** A shard object as JSON: one larger than PIECE_BYTES that starts with its entries (as the build
 * and publish write them) is parsed in pieces cut between entries; if any piece does not parse as
 * the piece of `entries` it must be, the whole is parsed instead (and its error reported). */
function parseShardJson(body: Uint8Array, where: string): ManifestShard {
  if (body.length > PIECE_BYTES && startsWith(body, SHARD_START)) {
    try {
      return parseShardInPieces(body);
    } catch {
      // Not cut as expected: parsed whole below.
    }
  }
  return parse<ManifestShard>(body, where);
}

const startsWith = (body: Uint8Array, prefix: Uint8Array, at = 0) => prefix.every((b, i) => body[at + i] === b);

/** Where `pattern` first stands in `bytes` from `from`, or -1 (Web-standard bytes: no Buffer here). */
function indexOfBytes(bytes: Uint8Array, pattern: Uint8Array, from: number): number {
  for (let i = bytes.indexOf(pattern[0], from); i >= 0; i = bytes.indexOf(pattern[0], i + 1))
    if (startsWith(bytes, pattern, i)) return i;
  return -1;
}

/** parseShardJson's pieces; throws when a piece does not parse as the piece it must be. */
export function parseShardInPieces(bytes: Uint8Array): ManifestShard {
  const entries: ManifestEntry[] = [];
  let start = 0;
  for (;;) {
    // The first cut between entries past PIECE_BYTES from this piece's start (minus one entry's room).
    const cut = bytes.length - start <= PIECE_BYTES ? -1 : indexOfBytes(bytes, NEXT_ENTRY, start + PIECE_BYTES - 512);
    if (cut < 0 || cut - start > PIECE_BYTES) {
      // The last piece: the rest of `entries`, then the shard's other members.
      const text = (start === 0 ? '' : '{"entries":[') + decoder.decode(bytes.subarray(start));
      const last = JSON.parse(text) as ManifestShard;
      if (!Array.isArray(last?.entries)) throw new Error('not a shard');
      for (const e of last.entries) entries.push(e);
      last.entries = entries;
      return last;
    }
    // Up to the end of an entry: as `{"entries":[…]}` (the first piece) or `[…]` (the others).
    const piece = decoder.decode(bytes.subarray(start, cut + 1));
    const parsed = JSON.parse(start === 0 ? `${piece}]}` : `[${piece}]`) as unknown;
    const list = start === 0 ? firstEntries(parsed) : parsed;
    if (!Array.isArray(list)) throw new Error('not a piece of entries');
    for (const e of list) entries.push(e as ManifestEntry);
    start = cut + 2;
  }
}

/** The first piece must hold `entries` and nothing else, or the cut was in another member. */
function firstEntries(parsed: unknown): unknown {
  const keys = parsed && typeof parsed === 'object' ? Object.keys(parsed) : [];
  return keys.length === 1 && keys[0] === 'entries' ? (parsed as ManifestShard).entries : null;
}

/** manifest.json: its release name and its shards, each with its path, size and sha256. `where`
 * names the file in messages. */
export function parseManifestIndex(body: Uint8Array, where: string): ManifestIndex {
  const index = parse<ManifestIndex>(body, where);
  if (
    !index ||
    typeof index.release !== 'string' ||
    (index.format !== MANIFEST_FORMAT && index.format !== 2) ||
    !Array.isArray(index.shards) ||
    !isShardCount(index.shards.length)
  ) {
    throw new Error(
      `${where}: not an isoatlas manifest of format ${MANIFEST_FORMAT} (rebuild the tree with this version of isoatlas)`,
    );
  }
  const packs = index.packs;
  if (
    packs !== undefined &&
    (!packs || typeof packs.sha256 !== 'string' || !SHA256_HEX.test(packs.sha256) || !Number.isSafeInteger(packs.size))
  )
    throw new Error(`${where}: invalid packs member ${JSON.stringify(packs).slice(0, 200)}`);
  index.shards.forEach((s, i) => {
    if (!validEntry(s) || s.path !== treePaths.manifestShard(i))
      throw new Error(`${where}: invalid shard entry ${JSON.stringify(s).slice(0, 200)}`);
  });
  return index;
}

/** The longest chain of bases a delta shard may have. */
export const MAX_CHAIN = 16;

/** A shard object as its head lists it (a base of a delta). */
export interface ShardRef {
  sha256: string;
  size: number;
}

/** A shard object, parsed: full when `bases` is empty (then `removed` is too). */
export interface ShardObject {
  entries: ManifestEntry[];
  removed: string[];
  bases: ShardRef[];
}

const byPath = (a: { path: string } | string, b: { path: string } | string) => {
  const x = typeof a === 'string' ? a : a.path;
  const y = typeof b === 'string' ? b : b.path;
  return x < y ? -1 : x > y ? 1 : 0;
};

/** Shard object `n` of `count`, full or (when `deltas`: a manifest of format 3) a delta: its entries
 * valid and hashed to this shard; a delta's entries and removed paths sorted, distinct and disjoint,
 * its bases at most MAX_CHAIN, distinct. */
export function parseShardObject(
  body: Uint8Array,
  n: number,
  count: number,
  where: string,
  deltas = true,
): ShardObject {
  const shard = parseShardJson(body, where);
  if (!shard || !Array.isArray(shard.entries)) throw new Error(`${where}: not a manifest shard`);
  for (const e of shard.entries) {
    if (!validEntry(e) || e.path === treePaths.manifest || e.path.startsWith('manifest/'))
      throw new Error(`${where}: invalid entry ${JSON.stringify(e).slice(0, 200)}`);
    if (shardOf(e.path, count) !== n) throw new Error(`${where}: lists ${e.path}, which belongs to another shard`);
  }
  if (shard.bases === undefined && shard.removed === undefined)
    return { entries: shard.entries, removed: [], bases: [] };
  if (!deltas) throw new Error(`${where}: a delta shard in a manifest of format 2`);
  const { bases, removed } = shard;
  if (
    !Array.isArray(bases) ||
    bases.length < 1 ||
    bases.length > MAX_CHAIN ||
    !bases.every(
      (b) =>
        b && typeof b.sha256 === 'string' && SHA256_HEX.test(b.sha256) && Number.isSafeInteger(b.size) && b.size >= 0,
    ) ||
    new Set(bases.map((b) => b.sha256)).size !== bases.length
  )
    throw new Error(`${where}: a delta shard needs 1 to ${MAX_CHAIN} distinct bases, each with its sha256 and size`);
  if (!Array.isArray(removed) || !removed.every((p) => typeof p === 'string' && SAFE_TREE_PATH.test(p)))
    throw new Error(`${where}: a delta shard's removed member must list tree paths`);
  for (const p of removed)
    if (shardOf(p, count) !== n) throw new Error(`${where}: removes ${p}, which belongs to another shard`);
  const sortedDistinct = (list: ({ path: string } | string)[]) =>
    list.every((x, i) => i === 0 || byPath(list[i - 1], x) < 0);
  if (!sortedDistinct(shard.entries) || !sortedDistinct(removed))
    throw new Error(`${where}: a delta shard's entries and removed paths must be sorted by path, each once`);
  const changed = new Set(shard.entries.map((e) => e.path));
  const both = removed.find((p) => changed.has(p));
  if (both !== undefined) throw new Error(`${where}: ${both} is both removed and listed`);
  return { entries: shard.entries, removed, bases: bases.map((b) => ({ sha256: b.sha256, size: b.size })) };
}

/** Checks that `bases` are the chain `head` lists (each already checked against its sha256): base k
 * lists the rest of the head's chain after it as its own, and the last is full. */
export function checkChain(head: ShardObject, bases: ShardObject[], where: string): void {
  if (bases.length !== head.bases.length)
    throw new Error(`${where}: ${bases.length} bases for ${head.bases.length} listed`);
  bases.forEach((base, k) => continues(head, base, k, where));
}

/** The entries of the shard a chain stands for, sorted by path: the full base's, then each delta
 * from the oldest to the head applied (its removed paths dropped, its entries put). */
export function resolveChain(head: ShardObject, bases: ShardObject[], where: string): ManifestEntry[] {
  checkChain(head, bases, where);
  return applyDeltas([head, ...bases]);
}

/** What a head and the first of its bases put over the rest of its chain, sorted by path: the
 * entries of the shard that these objects decide (a path they remove is not in the shard; one they
 * neither list nor remove is as the rest of the chain has it). `bases` are the head's first bases, in
 * order, each checked to continue the chain. A reader that knows the shard the rest stands for reads
 * only these. */
export function resolveChainOver(head: ShardObject, bases: ShardObject[], where: string): ManifestEntry[] {
  bases.forEach((base, k) => continues(head, base, k, where));
  return applyDeltas([head, ...bases]);
}

/** Base k of `head` lists the rest of the head's chain after it as its own. */
function continues(head: ShardObject, base: ShardObject, k: number, where: string): void {
  const rest = head.bases.slice(k + 1);
  if (
    base.bases.length !== rest.length ||
    base.bases.some((b, j) => b.sha256 !== rest[j].sha256 || b.size !== rest[j].size)
  )
    throw new Error(
      `${where}: its base ${head.bases[k].sha256} does not continue its chain (a base lists the rest of the chain after it, the last is full)`,
    );
}

/** The chain (head first) applied from its last object to its head. */
function applyDeltas(chain: ShardObject[]): ManifestEntry[] {
  const files = new Map<string, ManifestEntry>();
  for (let k = chain.length - 1; k >= 0; k--) {
    for (const p of chain[k].removed) files.delete(p);
    for (const e of chain[k].entries) files.set(e.path, e);
  }
  return [...files.values()].sort(byPath);
}

/** A shard object indexed for lookups by path (the edge keeps these, by sha256). */
export interface IndexedShardObject {
  object: ShardObject;
  files: Map<string, ManifestEntry>;
  removed: Set<string>;
}

export const indexShardObject = (object: ShardObject): IndexedShardObject => ({
  object,
  files: new Map(object.entries.map((e) => [e.path, e])),
  removed: new Set(object.removed),
});

/** A path's entry in a checked chain (head first): the nearest object naming it decides. */
export function lookupChain(chain: IndexedShardObject[], path: string): ManifestEntry | null {
  for (const o of chain) {
    const e = o.files.get(path);
    if (e) return e;
    if (o.removed.has(path)) return null;
  }
  return null;
}
