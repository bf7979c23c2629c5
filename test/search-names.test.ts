// Search by full name on the demo release (real chr22 genes and their NCBI names), through the edge
// handler as `isoatlas serve` builds it (createHandler over LocalTreeOrigin), called with Web requests:
// docs/API.md's examples, hyphenated words either way, a name word that also starts symbols, and
// limits over a long list of name hits. Expected sets are read from the gene records, not hard-coded.
import fg from 'fast-glob';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createHandler, type Handler } from '../edge/handler.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import type { GeneBody, SearchHitBody } from '../edge/contract/schemas.js';
import { demoRelease } from './helpers/demo-release.js';
import { validate } from './helpers/schemas.js';

interface Results {
  total: number;
  items: SearchHitBody[];
}

let handler: Handler;
let genes: GeneBody[];

beforeAll(async () => {
  const { tree } = await demoRelease();
  handler = createHandler({ origin: new LocalTreeOrigin(tree) });
  genes = fg
    .sync('api/v1/genes/*.json', { cwd: tree })
    .map((path) => JSON.parse(readFileSync(join(tree, path), 'utf8')) as GeneBody);
});

async function search(query: string, limit = 10): Promise<Results> {
  const url = `http://atlas.test/api/v1/search?query=${encodeURIComponent(query)}&limit=${limit}`;
  const response = await handler(new Request(url));
  expect(response.status, query).toBe(200);
  const body = await response.json();
  expect(validate('SearchResults', body)).toEqual([]);
  return body as Results;
}

/** A name's words as docs/API.md defines them: runs of letters and digits, lower-cased. */
const wordsOf = (text: string) => [...text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m[0]);
const gene = (symbol: string) => genes.find((g) => g.symbol === symbol)!;
const namedWith = (...words: string[]) =>
  genes.filter((g) => g.name !== null && words.every((w) => wordsOf(g.name!).includes(w)));

describe('search by full name (demo release)', () => {
  it('finds MAPK1 first by its full name, with the name its record has', async () => {
    const mapk1 = gene('MAPK1');
    expect(mapk1.name).toBe('mitogen-activated protein kinase 1');
    const { items } = await search('mitogen-activated protein kinase 1');
    expect(items[0]).toEqual({
      type: 'gene',
      id: mapk1.gene_id,
      symbol: 'MAPK1',
      name: mapk1.name,
      matched_field: 'name',
      match: 'exact',
      score: 2.75, // docs/API.md's figure: 4 words × 0.6, phrase 0.1, whole name 0.15, length 0.1
      link: `/api/v1/genes/${mapk1.gene_id}`,
    });
    // The other MAPKs hold fewer of the words: after it.
    expect(items.slice(1).every((h) => h.score < items[0].score)).toBe(true);
  });

  it('finds PRR5 first for "proline rich 5", then the genes with fewer of its words', async () => {
    const { items } = await search('proline rich 5', 25);
    expect(items[0]).toMatchObject({ symbol: 'PRR5', name: 'proline rich 5', match: 'exact', matched_field: 'name' });
    // Next the gene whose name holds two of the three words (PRR14L), then those with one.
    expect(items[1]).toMatchObject({ symbol: 'PRR14L', name: 'proline rich 14 like' });
    expect(items.slice(2).every((h) => h.score < items[1].score)).toBe(true);
  });

  it('finds the genes whose names hold "proline rich", the phrase and shorter names first', async () => {
    const both = namedWith('proline', 'rich');
    expect(both.map((g) => g.symbol).sort()).toEqual(['PRR14L', 'PRR5']);
    const { items } = await search('proline rich', 25);
    expect(items.slice(0, 2).map((h) => [h.symbol, h.score])).toEqual([
      ['PRR5', 1.367], // docs/API.md's figures: "proline rich 5" (3 words) before "proline rich 14 like" (4)
      ['PRR14L', 1.35],
    ]);
    // Every other hit holds one of the words only, and ranks below.
    for (const h of items.slice(2)) {
      expect(h.score, h.symbol).toBeLessThan(1.35);
      expect(both.some((g) => g.gene_id === h.id)).toBe(false);
    }
    // The words out of order still find both, after any name holding them as a phrase.
    const reversed = await search('rich proline', 2);
    expect(reversed.items.map((h) => h.symbol).sort()).toEqual(['PRR14L', 'PRR5']);
    expect(reversed.items[0].score).toBeLessThan(1.35);
  });

  it('reads a hyphenated word either way: "mitogen-activated" and "mitogen activated" find the same genes first', async () => {
    const both = namedWith('mitogen', 'activated')
      .map((g) => g.gene_id)
      .sort();
    expect(both.length).toBeGreaterThanOrEqual(4); // MAPK1, MAPK11, MAPK12, MAPK8IP2
    const firsts: string[][] = [];
    for (const query of ['mitogen-activated', 'mitogen activated', 'Mitogen Activated', 'MITOGEN-ACTIVATED']) {
      const { items } = await search(query, 25);
      const first = items.slice(0, both.length);
      expect(first.every((h) => h.match === 'exact' && h.matched_field === 'name')).toBe(true);
      expect(first.map((h) => h.id).sort(), query).toEqual(both);
      firsts.push(first.map((h) => h.id));
      // One hyphenated word is one query word: a name must hold both its parts. Two words are two
      // query words: a name with one of them follows, below any name holding both.
      const rest = items.slice(both.length).filter((h) => h.match === 'exact');
      if (query.includes('-')) expect(rest, query).toEqual([]);
      else expect(rest.every((h) => h.score < first.at(-1)!.score)).toBe(true);
    }
    // In the same order every way.
    for (const order of firsts) expect(order).toEqual(firsts[0]);
    // The full name either way finds MAPK1 first.
    for (const query of ['mitogen activated protein kinase 1', 'Mitogen-activated protein kinase 1'])
      expect((await search(query)).items[0], query).toMatchObject({ symbol: 'MAPK1', match: 'exact' });
    // Half a hyphenated word is not the word: "mitogen-foo" finds no name through "mitogen".
    const half = await search('mitogen-foo', 25);
    expect(half.items.filter((h) => h.matched_field === 'name')).toEqual([]);
  });

  it('a name word that also starts symbols: the names in the exact tier, the symbols it starts after, each gene once', async () => {
    // "ras": RAB36's "RAB36, member RAS oncogene family", RASL10A's "RAS like family 10 member A"; and
    // RASD2 ("RASD family member 2"), whose symbol starts with it and whose name does not hold it.
    const named = namedWith('ras').map((g) => g.gene_id);
    const startsSymbol = genes.filter((g) => g.symbol.toLowerCase().startsWith('ras') && !named.includes(g.gene_id));
    expect(named.length).toBeGreaterThanOrEqual(3);
    expect(startsSymbol.map((g) => g.symbol)).toContain('RASD2');
    const { items } = await search('ras', 25);
    const exactGenes = items.filter((h) => h.match === 'exact');
    expect(exactGenes.map((h) => h.id).sort()).toEqual([...named].sort());
    expect(exactGenes.every((h) => h.matched_field === 'name' && h.score < 1)).toBe(true);
    for (const g of startsSymbol)
      expect(
        items.find((h) => h.id === g.gene_id),
        g.symbol,
      ).toMatchObject({ match: 'prefix', matched_field: 'symbol' });
    expect(new Set(items.map((h) => h.id)).size).toBe(items.length);
    // A whole symbol still comes first: LIF, then LIF-AS1 and LIF-AS2, whose names have the word LIF.
    const lif = await search('LIF');
    expect(lif.items.slice(0, 3).map((h) => [h.symbol, h.match, h.matched_field])).toEqual([
      ['LIF', 'exact', 'symbol'],
      ['LIF-AS1', 'exact', 'name'],
      ['LIF-AS2', 'exact', 'name'],
    ]);
  });

  it('matches a longer query by prefix and by typo only in its words that match nothing exactly', async () => {
    // "PRR5" alone also finds, by prefix, the isoforms its name starts (PRR5-201…).
    const alone = await search('PRR5', 25);
    expect(alone.items.some((h) => h.match === 'prefix' && h.type === 'isoform' && h.symbol === 'PRR5')).toBe(true);
    // Beside a word being typed, it is a whole word: the prefix tier is the other word's.
    const typing = await search('PRR5 MED1', 25);
    expect(typing.items[0]).toMatchObject({ symbol: 'PRR5', match: 'exact' });
    const prefixed = typing.items.filter((h) => h.match === 'prefix');
    expect(prefixed.length).toBeGreaterThan(0);
    for (const h of prefixed) expect(h.symbol, h.name ?? h.id).toMatch(/^MED1/);
    // A name being typed: the whole words exactly, the last one by prefix.
    const name = await search('proline ric', 25);
    const exact = name.items.filter((h) => h.match === 'exact');
    expect(exact.map((h) => h.symbol)).toContain('PRR5');
    for (const h of exact) expect(wordsOf(h.name!)).toContain('proline');
    for (const h of name.items.filter((h) => h.match === 'prefix'))
      expect(wordsOf(h.name ?? '').some((w) => w.startsWith('ric')) || h.symbol.toLowerCase().startsWith('ric')).toBe(
        true,
      );
    // A typo beside a word: the typo'd symbol is still found, one typo away.
    const typo = await search('CRAD10 kinase', 25);
    expect(typo.items.find((h) => h.symbol === 'CARD10')).toMatchObject({ match: 'fuzzy', matched_field: 'symbol' });
  });

  it('gives a long list of name hits in the same order at every limit, with the same total', async () => {
    const holding = namedWith('protein');
    expect(holding.length).toBeGreaterThan(100);
    const all = await search('protein', 25);
    // 25 name hits, best first: with one word, the shorter name ranks first.
    expect(all.items).toHaveLength(25);
    expect(all.total).toBeGreaterThanOrEqual(holding.length);
    const lengths = all.items.map((h) => {
      expect(h).toMatchObject({ type: 'gene', match: 'exact', matched_field: 'name' });
      expect(wordsOf(h.name!)).toContain('protein');
      return wordsOf(h.name!).length;
    });
    expect(lengths).toEqual([...lengths].sort((a, b) => a - b));
    for (const limit of [1, 7, 10, 24]) {
      const page = await search('protein', limit);
      expect(page.total, `limit ${limit}`).toBe(all.total);
      expect(page.items, `limit ${limit}`).toEqual(all.items.slice(0, limit));
    }
  });

  it('shows a gene without a full name with a null name, and an isoform with its transcript name', async () => {
    const unnamed = genes.find((g) => g.name === null && /^ENSG/.test(g.gene_id))!;
    expect((await search(unnamed.gene_id)).items[0]).toMatchObject({ id: unnamed.gene_id, name: null });
    expect((await search('PRR5-201')).items[0]).toMatchObject({ type: 'isoform', symbol: 'PRR5', name: 'PRR5-201' });
    // A fuzzy hit shows the gene's name too.
    expect((await search('MPAK1')).items[0]).toMatchObject({
      symbol: 'MAPK1',
      match: 'fuzzy',
      name: 'mitogen-activated protein kinase 1',
    });
  });
});
