// The release's edge data, loaded from the origin shard by shard as requests need it: the alias
// maps, the structure map and the search index (contract/tree.ts describes the layout). Everything
// loaded is kept in one cache bounded by weight, so an edge instance's memory stays fixed however
// large the release.
import MiniSearch from 'minisearch';
import {
  EDGE_INDEX_FORMAT,
  treePaths,
  type EdgeIndex,
  type ShardBody,
  type StructureMapEntry,
} from './contract/tree.js';
import { typoIndexOptions, type TypoDocument } from './contract/search.js';
import { isShardCount, shardOf } from './contract/shards.js';
import { LoadingCache } from './loading-cache.js';
import { TermShard } from './term-shard.js';
import { TypoShard } from './typo-shard.js';
import { OriginError } from './origin.js';
import type { VerifiedOrigin } from './origins/verified.js';

const decoder = new TextDecoder();

/** Default weight budget of loaded edge data (about the heap it takes). */
export const EDGE_DATA_BUDGET = 48 * 1024 * 1024;
// Parsed objects take more memory than their JSON (V8 heap after parsing ÷ JSON characters, measured
// at human scale): an alias or structure map about 3.2 times, a term shard 3.7, a typo shard (a
// MiniSearch radix tree plus its symbols by spelling) 11.3. Weights round them up, so the budget is
// the heap the loaded data takes.
const MAP_WEIGHT = 3.5;
const TERM_WEIGHT = 4;
const TYPO_WEIGHT = 12;

export class ReleaseData {
  private indexP: Promise<EdgeIndex> | null = null;
  private readonly cache: LoadingCache<unknown>;

  constructor(
    private readonly origin: VerifiedOrigin,
    budget = EDGE_DATA_BUDGET,
  ) {
    this.cache = new LoadingCache(budget);
  }

  index(): Promise<EdgeIndex> {
    return (this.indexP ??= this.origin
      .read(treePaths.edgeIndex)
      .then((file) => {
        if (!file)
          throw new OriginError(
            `the tree at ${this.origin.description} has no ${treePaths.edgeIndex}: is it a rendered isoatlas tree of this version?`,
            'unavailable',
          );
        const text = decoder.decode(file.body);
        const index = JSON.parse(text) as EdgeIndex;
        const counts = [index.gene_aliases?.shards, index.isoform_aliases?.shards, index.structures?.shards];
        if (
          index.format !== EDGE_INDEX_FORMAT ||
          !counts.every(isShardCount) ||
          !Array.isArray(index.search?.terms) ||
          !isShardCount(index.search?.typo?.shards) ||
          !Number.isInteger(index.search?.documents) ||
          !isWordCounts(index.search.common_words) ||
          typeof index.sha256 !== 'object' ||
          index.sha256 === null
        )
          throw new Error(`not an edge index of format ${EDGE_INDEX_FORMAT}: rebuild the tree with this version`);
        return index;
      })
      .catch((err) => {
        this.indexP = null;
        throw err instanceof OriginError
          ? err
          : new OriginError(`cannot load ${treePaths.edgeIndex}: ${(err as Error).message}`, 'unavailable');
      }));
  }

  /** A gene symbol (any case) or gene id (with or without version) → gene id, or the ids of every
   * gene a shared symbol names; null when nothing is called that. */
  async gene(key: string): Promise<string | string[] | null> {
    const k = key.toLowerCase();
    return lookup(
      await this.table<string | string[]>(treePaths.geneAliases(shardOf(k, (await this.index()).gene_aliases.shards))),
      k,
    );
  }

  /** A transcript id (with or without version) or name, in any case → transcript id. */
  async isoform(key: string): Promise<string | null> {
    const k = key.toLowerCase();
    return lookup(
      await this.table<string>(treePaths.isoformAliases(shardOf(k, (await this.index()).isoform_aliases.shards))),
      k,
    );
  }

  async structure(transcriptId: string): Promise<StructureMapEntry | null> {
    return lookup(
      await this.table<StructureMapEntry>(
        treePaths.structureMap(shardOf(transcriptId, (await this.index()).structures.shards)),
      ),
      transcriptId,
    );
  }

  termShard(shard: number): Promise<TermShard> {
    const path = treePaths.searchTerms(shard);
    return this.cache.get(path, async () => {
      const text = await this.read(path);
      return { value: this.parsed(path, () => new TermShard(JSON.parse(text))), weight: text.length * TERM_WEIGHT };
    }) as Promise<TermShard>;
  }

  typoShard(shard: number): Promise<TypoShard> {
    const path = treePaths.searchTypo(shard);
    return this.cache.get(path, async () => {
      const text = await this.read(path);
      return {
        value: this.parsed(path, () => new TypoShard(MiniSearch.loadJSON<TypoDocument>(text, typoIndexOptions))),
        weight: text.length * TYPO_WEIGHT,
      };
    }) as Promise<TypoShard>;
  }

  /** How much edge data is loaded now (for benchmarks and tests). */
  get loaded(): { entries: number; weight: number } {
    return this.cache.size;
  }

  private table<T>(path: string): Promise<ShardBody<T>> {
    return this.cache.get(path, async () => {
      const text = await this.read(path);
      return { value: JSON.parse(text) as ShardBody<T>, weight: text.length * MAP_WEIGHT };
    }) as Promise<ShardBody<T>>;
  }

  /** A shard's parsed form; a shard the tree lists but this version cannot read is the origin's fault
   * (502), not a bug of the request. */
  private parsed<T>(path: string, parse: () => T): T {
    try {
      return parse();
    } catch (err) {
      throw new OriginError(
        `cannot load ${path} from ${this.origin.description}: ${(err as Error).message}; is it a tree rendered by this version?`,
        'unavailable',
      );
    }
  }

  /** A shard, checked against the hash the edge index lists for it. */
  private async read(path: string): Promise<string> {
    const sha256 = (await this.index()).sha256[path];
    if (typeof sha256 !== 'string')
      throw new OriginError(
        `${treePaths.edgeIndex} at ${this.origin.description} does not list ${path}: is it a tree rendered by this version?`,
        'unavailable',
      );
    return decoder.decode(await this.origin.readChecked(path, sha256));
  }
}

/** Absent (a tree built before common words were listed), or words with their counts. */
function isWordCounts(value: unknown): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.values(value).every((n) => Number.isInteger(n));
}

function lookup<T>(table: ShardBody<T>, key: string): T | null {
  return Object.hasOwn(table, key) ? table[key] : null;
}
