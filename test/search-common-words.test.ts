// Common words of full names (contract/search.ts COMMON_NAME_WORD_SHARE) on the demo release, in-process
// over its tree as an edge instance reads it. The build lists exactly the words that more than that share
// of the named genes hold, with their counts. A query reads the term shards of its telling strings only
// (its terms and words that are not common; when the index has none of them, its least common word), and
// answers what the whole index answers among the records those strings find: the same hits, ranks and
// scores. The whole index is the same tree read as if it listed no common words.
import fg from 'fast-glob';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMON_NAME_WORD_SHARE, nameWords, searchTerms, type TermShardBody } from '../edge/contract/search.js';
import type { GeneBody, SearchHitBody } from '../edge/contract/schemas.js';
import { treePaths, type EdgeIndex, type SearchDirectory } from '../edge/contract/tree.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { VerifiedOrigin } from '../edge/origins/verified.js';
import { ReleaseData } from '../edge/release-data.js';
import { search } from '../edge/search-engine.js';
import type { TermShard } from '../edge/term-shard.js';
import { demoRelease } from './helpers/demo-release.js';

/** The tree as an edge instance reads it, noting every term shard a search asks for (loaded or not). */
class CountingData extends ReleaseData {
  readonly asked = new Set<number>();
  override termShard(shard: number): Promise<TermShard> {
    this.asked.add(shard);
    return super.termShard(shard);
  }
}

/** The same tree read as if its index listed no common words: every word's postings are read. */
class WholeIndexData extends CountingData {
  override index(): Promise<EdgeIndex> {
    return super.index().then((index) => ({ ...index, search: { ...index.search, common_words: {} } }));
  }
}

let tree: string;
let genes: GeneBody[];
let byId: Map<string, GeneBody>;
let dir: SearchDirectory;
let counts: Map<string, number>;
const open = <T extends ReleaseData>(Kind: new (origin: VerifiedOrigin) => T) =>
  new Kind(new VerifiedOrigin(new LocalOrigin(tree)));

beforeAll(async () => {
  ({ tree } = await demoRelease());
  genes = fg
    .sync('api/v1/genes/*.json', { cwd: tree })
    .map((path) => JSON.parse(readFileSync(join(tree, path), 'utf8')) as GeneBody);
  byId = new Map(genes.map((g) => [g.gene_id, g]));
  dir = (JSON.parse(readFileSync(join(tree, treePaths.edgeIndex), 'utf8')) as EdgeIndex).search;
  counts = new Map(Object.entries(dir.common_words ?? {}));
});

/** The term shard whose range holds `term` (-1: before every shard). */
const shardOfTerm = (term: string) => dir.terms.filter((s) => s.from <= term).length - 1;
const shardBodies = new Map<number, TermShardBody>();
const inIndex = (term: string) => {
  const n = shardOfTerm(term);
  if (n < 0) return false;
  if (!shardBodies.has(n)) shardBodies.set(n, JSON.parse(readFileSync(join(tree, treePaths.searchTerms(n)), 'utf8')));
  return shardBodies.get(n)!.terms.includes(term);
};

/** The strings of a query the engine reads, by the rule of contract/search.ts: its terms and words that
 * are not common; when the index has none of them, its least common word too (the first, if tied). */
function readStrings(query: string): string[] {
  const isCommon = (s: string) => nameWords(s).length > 0 && nameWords(s).every((w) => counts.has(w));
  const telling = [...new Set([...searchTerms(query), ...nameWords(query)])].filter((s) => !isCommon(s));
  const commons = nameWords(query).filter((w) => counts.has(w));
  if (telling.some(inIndex) || commons.length === 0) return telling;
  return [...telling, commons.reduce((a, b) => (counts.get(b)! < counts.get(a)! ? b : a))];
}

/** A hit the read strings find: a gene whose name holds one, a record matched through another field
 * than the name, or a gene with one among its synonyms (a synonym scores less than a name word, so such
 * a hit shows the name as its matched field). */
const foundBy = (hit: SearchHitBody, read: string[]) =>
  hit.matched_field !== 'name' ||
  nameWords(hit.name ?? '').some((w) => read.includes(w)) ||
  (byId.get(hit.id)?.synonyms ?? []).some((s) => read.includes(s.toLowerCase()));

/** Queries whose term shards were checked. */
let asserted = 0;

/** Searches `query` on both, and checks the lean answer against the whole index's; says whether the
 * query left a word unread. */
async function compare(lean: CountingData, whole: CountingData, query: string): Promise<boolean> {
  lean.asked.clear();
  const got = await search(lean, query, 100);
  const all = await search(whole, query, 100);
  const read = readStrings(query);
  // Only the shards of the strings read are asked for, when no term is left for the prefix and typo
  // tiers (a query of several words, each in the index).
  if (searchTerms(query).length > 1 && read.every(inIndex)) {
    const shards = new Set(read.map(shardOfTerm).filter((s) => s >= 0));
    expect([...lean.asked].sort(), query).toEqual([...shards].sort());
    asserted++;
  }
  if (nameWords(query).every((w) => read.includes(w))) {
    expect(got, query).toEqual(all); // every word read: nothing to leave out
    return false;
  }
  const kept = all.items.filter((h) => foundBy(h, read));
  const n = Math.min(kept.length, got.items.length);
  expect(got.items.slice(0, n), query).toEqual(kept.slice(0, n));
  if (all.total <= 100) {
    expect(got.items, query).toEqual(kept);
    expect(got.total, query).toBe(kept.length);
  }
  return true;
}

describe('common words of full names (demo release)', () => {
  it('lists exactly the words more than the common share of named genes hold, with their counts, in term order', () => {
    const named = genes.filter((g) => g.name !== null);
    const holders = new Map<string, number>();
    for (const g of named) for (const w of new Set(nameWords(g.name!))) holders.set(w, (holders.get(w) ?? 0) + 1);
    const expected = [...holders].filter(([, n]) => n > named.length * COMMON_NAME_WORD_SHARE);
    expected.sort(([a], [b]) => (a < b ? -1 : 1));
    expect(expected.map(([w]) => w)).toEqual(expect.arrayContaining(['protein', 'pseudogene', 'family']));
    expect(Object.entries(dir.common_words ?? {})).toEqual(expected);
  });

  it('loads an edge index without the list (an older tree), and refuses one whose list is not words with counts', async () => {
    const index = JSON.parse(readFileSync(join(tree, treePaths.edgeIndex), 'utf8')) as EdgeIndex;
    // The index as its origin answers it, already verified: only its shape is left to check.
    const served = (common: unknown) =>
      new ReleaseData({
        description: 'test',
        read: async () => ({
          body: Buffer.from(JSON.stringify({ ...index, search: { ...index.search, common_words: common } })),
        }),
      } as unknown as VerifiedOrigin).index();
    await expect(served(undefined)).resolves.toMatchObject({ format: index.format });
    for (const bad of [['protein'], { protein: 'many' }, 'protein', null])
      await expect(served(bad), JSON.stringify(bad)).rejects.toThrow(/not an edge index/);
  });

  it('finds every named gene first by its full name, as the whole index ranks what the strings read find', async () => {
    const lean = open(CountingData);
    const whole = open(WholeIndexData);
    let leftOut = 0;
    for (const g of genes.filter((x) => x.name !== null)) {
      const query = g.name!;
      const got = await search(lean, query, 10);
      // First, or tied first with another gene of the same name (ELFN2 has two ids in the demo).
      expect(
        got.items.filter((h) => h.score === got.items[0].score).map((h) => h.id),
        query,
      ).toContain(g.gene_id);
      if (await compare(lean, whole, query)) leftOut++;
    }
    // The demo's names hold common words ("protein", "pseudogene"), so most of these leave some unread.
    expect(leftOut).toBeGreaterThan(500);
    expect(asserted).toBeGreaterThan(300);
  });

  it('reads a lone common word, and the least common word of a query of common words only', async () => {
    const lean = open(CountingData);
    const whole = open(WholeIndexData);
    for (const query of ['protein', 'pseudogene', 'RNA', 'BCR pseudogene 6'])
      expect(await compare(lean, whole, query), query).toBe(query === 'BCR pseudogene 6');
    for (const query of [
      'protein family member',
      'immunoglobulin lambda variable 2',
      'cytochromx protein family',
      'qqqzz pseudogene 1',
    ]) {
      expect(await compare(lean, whole, query), query).toBe(true);
      const least = nameWords(query)
        .filter((w) => counts.has(w))
        .sort((a, b) => counts.get(a)! - counts.get(b)!)[0];
      expect(readStrings(query), query).toContain(least);
    }
    // A common word alone finds every gene whose name holds it.
    const pseudogenes = genes.filter((g) => g.name !== null && nameWords(g.name).includes('pseudogene'));
    expect((await search(lean, 'pseudogene', 10)).total).toBeGreaterThanOrEqual(pseudogenes.length);
  });
});
