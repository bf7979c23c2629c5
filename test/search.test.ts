// The sharded search against a plain reference: every symbol, id and name of the demo release read
// (and every gene's synonyms and full name) from its gene and isoform files (not from the index),
// matched by brute force. For each sampled query the edge's search must give the same total, the same
// hits in the same order, with the same tiers, fields and scores: this pins the term shards, the
// prefix tier's best-k selection, the document bitsets, the typo shards and the full-name ranking to
// what docs/API.md says search does.
import fg from 'fast-glob';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { demoRelease } from './helpers/demo-release.js';
import { Rng } from '../build/generate/random.js';
import { typo } from '../bench/search-quality.js';
import { ReleaseData } from '../edge/release-data.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { VerifiedOrigin } from '../edge/origins/verified.js';
import { editDistance, search } from '../edge/search-engine.js';
import type { GeneBody, IsoformBody, SearchHitBody } from '../edge/contract/schemas.js';

interface Doc {
  id: string;
  type: 'gene' | 'isoform';
  symbol: string;
  name: string | null;
  terms: [term: string, field: string][];
  /** A gene's full name, as words in order (docs/API.md: runs of letters and digits); else empty. */
  nameWords: string[];
}

/** docs/API.md's words: runs of letters and digits, lower-cased. */
const wordsOf = (text: string) => [...text.toLowerCase().matchAll(/[\p{L}\p{N}]+/gu)].map((m) => m[0]);

const PRIORITY = [
  'symbol',
  'gene_id',
  'gene_id_versioned',
  'transcript_name',
  'transcript_id',
  'transcript_id_unversioned',
  'name',
  'synonyms',
];
let docs: Doc[];
let data: ReleaseData;
/** Every term of every record (any field): what the index knows. */
let known: Set<string>;
/** docs/API.md's common words of names: held by more than 1 in 40 of the named genes, with their counts. */
let common: Map<string, number>;

// The demo's whole tree: term shards and typo shards of many entries, queries over every real symbol.
beforeAll(async () => {
  const { tree } = await demoRelease();
  const read = <T>(path: string) => JSON.parse(readFileSync(join(tree, path), 'utf8')) as T;
  docs = [];
  for (const path of fg.sync('api/v1/genes/*.json', { cwd: tree })) {
    const g = read<GeneBody>(path);
    const terms: Doc['terms'] = [
      [g.symbol, 'symbol'],
      [g.gene_id, 'gene_id'],
    ];
    if (g.gene_id_versioned) terms.push([g.gene_id_versioned, 'gene_id_versioned']);
    for (const synonym of g.synonyms) terms.push([synonym, 'synonyms']);
    const nameWords = g.name === null ? [] : wordsOf(g.name);
    for (const word of new Set(nameWords)) terms.push([word, 'name']);
    docs.push({
      id: `g:${g.gene_id}`,
      type: 'gene',
      symbol: g.symbol,
      name: g.name,
      terms: terms.map(([t, f]) => [t.toLowerCase(), f]),
      nameWords,
    });
  }
  for (const path of fg.sync('api/v1/isoforms/*.json', { cwd: tree })) {
    const i = read<IsoformBody>(path);
    const terms: Doc['terms'] = [
      [i.transcript_id, 'transcript_id'],
      [i.transcript_name, 'transcript_name'],
    ];
    if (i.transcript_id_unversioned) terms.push([i.transcript_id_unversioned, 'transcript_id_unversioned']);
    docs.push({
      id: `i:${i.transcript_id}`,
      type: 'isoform',
      symbol: i.gene_symbol,
      name: i.transcript_name,
      terms: terms.map(([t, f]) => [t.toLowerCase(), f]),
      nameWords: [],
    });
  }
  data = new ReleaseData(new VerifiedOrigin(new LocalOrigin(tree)));
  known = new Set(docs.flatMap((d) => d.terms.map(([t]) => t)));
  const named = docs.filter((d) => d.nameWords.length > 0);
  common = new Map();
  for (const d of named) for (const w of new Set(d.nameWords)) common.set(w, (common.get(w) ?? 0) + 1);
  for (const [w, n] of common) if (n <= named.length / 40) common.delete(w);
});

/** The strings of a query that find records (docs/API.md): its terms and words that are not common
 * words of names; when the release knows none of them, its least common word. */
function readStrings(terms: string[], words: string[]): Set<string> {
  const isCommon = (s: string) => wordsOf(s).length > 0 && wordsOf(s).every((w) => common.has(w));
  const telling = [...new Set([...terms, ...words])].filter((s) => !isCommon(s));
  const read = new Set(telling);
  const commons = words.filter((w) => common.has(w));
  if (!telling.some((s) => known.has(s)) && commons.length > 0)
    read.add(commons.reduce((a, b) => (common.get(b)! < common.get(a)! ? b : a)));
  return read;
}

/** One query term's prefix or fuzzy matches: document → [score, fields]. */
function termMatches(term: string, tier: 'prefix' | 'fuzzy'): Map<Doc, [number, Set<string>]> {
  const out = new Map<Doc, [number, Set<string>]>();
  for (const doc of docs) {
    for (const [t, field] of doc.terms) {
      let score = 0;
      if (tier === 'prefix' && t.startsWith(term)) score = term.length / t.length;
      if (
        tier === 'fuzzy' &&
        field === 'symbol' &&
        term.length >= 3 &&
        t.length >= 3 &&
        t !== term &&
        editDistance(term, t, 1) === 1
      ) {
        // A swap or a left-out letter 0.5, a wrong or extra letter 0.25.
        const differing = [...term].filter((c, k) => c !== t[k]).length;
        score = term.length < t.length || (term.length === t.length && differing === 2) ? 0.5 : 0.25;
      }
      if (score === 0) continue;
      // A match through a synonym counts half, through a word of a full name 0.6.
      if (field === 'synonyms') score /= 2;
      if (field === 'name') score *= 0.6;
      const had = out.get(doc);
      if (had) {
        had[0] = Math.max(had[0], score);
        had[1].add(field);
      } else out.set(doc, [score, new Set([field])]);
    }
  }
  return out;
}

/** The exact tier, as docs/API.md states it: over the records the query's read strings find, each term
 * its best, a whole symbol, id, name or synonym it is (1, a synonym 0.5) or a full name holding all its
 * words (0.6); then, for a full name holding every word of the query (its first 30 distinct), 0.1 for
 * the words as a phrase, 0.15 more for the whole name, and 0.1 × query words ÷ name words. */
function exactMatches(terms: string[], query: string, matchedTerms: Set<string>): Map<Doc, [number, Set<string>]> {
  const sequence = wordsOf(query);
  const words = [...new Set(sequence)].slice(0, 30);
  const read = readStrings(terms, words);
  // A term of common words only, not read, is a known word: not one for the prefix and typo tiers.
  for (const term of terms) if (!read.has(term)) matchedTerms.add(term);
  const out = new Map<Doc, [number, Set<string>]>();
  for (const doc of docs) {
    const nameHas = new Set(doc.nameWords);
    // Only the records the read strings find: through another field than the name, or a name word.
    const found =
      doc.terms.some(([t, field]) => field !== 'name' && read.has(t) && terms.includes(t)) ||
      words.some((w) => read.has(w) && nameHas.has(w));
    if (!found) continue;
    const fields = new Set<string>();
    let score = 0;
    for (const term of terms) {
      let own = 0;
      for (const [t, field] of doc.terms) {
        if (t !== term || field === 'name') continue;
        own = Math.max(own, field === 'synonyms' ? 0.5 : 1);
        fields.add(field);
      }
      const termWords = wordsOf(term).filter((w) => words.includes(w));
      const viaName = termWords.length > 0 && termWords.every((w) => nameHas.has(w)) ? 0.6 : 0;
      if (viaName) fields.add('name');
      if (own || viaName) matchedTerms.add(term);
      score += Math.max(own, viaName);
    }
    if (score === 0) continue;
    if (words.length > 0 && words.every((w) => nameHas.has(w))) {
      const n = doc.nameWords;
      const phrase = n.some((_, i) => sequence.every((w, k) => n[i + k] === w));
      const whole = phrase && n.length === sequence.length;
      score += (phrase ? 0.1 : 0) + (whole ? 0.15 : 0) + 0.1 * Math.min(1, sequence.length / n.length);
    }
    out.set(doc, [score, fields]);
  }
  return out;
}

function reference(query: string, limit: number): { total: number; items: SearchHitBody[] } {
  const terms = [
    ...new Set(
      query
        .split(/\s+/)
        .filter(Boolean)
        .map((t) => t.toLowerCase()),
    ),
  ];
  const placed = new Set<Doc>();
  const items: SearchHitBody[] = [];
  let total = 0;
  // docs/API.md: prefix and typo matching take a one-word query's word, and of a longer query the
  // words that matched nothing exactly.
  const matchedTerms = new Set<string>();
  for (const tier of ['exact', 'prefix', 'fuzzy'] as const) {
    const tierDocs = new Map<Doc, [number, Set<string>]>();
    if (tier === 'exact') for (const [doc, match] of exactMatches(terms, query, matchedTerms)) tierDocs.set(doc, match);
    else
      for (const term of terms.length === 1 ? terms : terms.filter((t) => !matchedTerms.has(t))) {
        for (const [doc, [score, fields]] of termMatches(term, tier)) {
          if (placed.has(doc)) continue;
          const had = tierDocs.get(doc);
          if (had) {
            had[0] += score;
            fields.forEach((f) => had[1].add(f));
          } else tierDocs.set(doc, [score, new Set(fields)]);
        }
      }
    const ranked = [...tierDocs].sort(([a, [sa]], [b, [sb]]) => sb - sa || (a.id < b.id ? -1 : 1));
    for (const [doc, [score, fields]] of ranked.slice(0, limit - items.length)) {
      const id = doc.id.slice(2);
      items.push({
        type: doc.type,
        id,
        symbol: doc.symbol,
        name: doc.name,
        matched_field: PRIORITY.find((f) => fields.has(f))!,
        match: tier,
        score: Math.round(score * 1000) / 1000,
        link: `/api/v1/${doc.type === 'gene' ? 'genes' : 'isoforms'}/${encodeURIComponent(id)}`,
      });
    }
    tierDocs.forEach((_, doc) => placed.add(doc));
    total += tierDocs.size;
  }
  return { total, items };
}

describe('search against a brute-force reference (demo release)', () => {
  it('agrees on totals, hits, order, tiers, fields and scores for sampled queries', async () => {
    const rng = new Rng(31);
    const pick = <T>(items: T[]) => items[Math.floor(rng.next() * items.length)];
    const genes = docs.filter((d) => d.type === 'gene');
    const isoforms = docs.filter((d) => d.type === 'isoform');
    const queries: string[] = [
      'PRR5',
      'prr5-2',
      'ENST0000000',
      'ENSG000001',
      'PB.1',
      'novelGene_1',
      'TP35',
      'MPAK1',
      'Y_RNA',
      'mir',
      'zzzzqqqq',
      'ERK2',
      'erk',
      'RAD53 CDS1',
      'p4',
    ];
    for (let k = 0; k < 60; k++) {
      const g = pick(genes);
      const i = pick(isoforms);
      queries.push(
        g.symbol,
        g.symbol.slice(0, 3),
        g.symbol.slice(0, 4 + Math.floor(rng.next() * 3)),
        typo(() => rng.next(), g.symbol).text,
        i.name!,
        i.id.slice(2, 2 + 8 + Math.floor(rng.next() * 8)),
        `${g.symbol} ${pick(genes).symbol.slice(0, 3)}`,
      );
    }
    // Full names and their words: whole, a word, two neighbouring words, hyphens as spaces, words out
    // of order, a word and the start of the next, a symbol and a word.
    const names = new Rng(37);
    const pickName = <T>(items: T[]) => items[Math.floor(names.next() * items.length)];
    const named = genes.filter((g) => g.name !== null);
    queries.push(
      'mitogen-activated protein kinase 1',
      'mitogen activated protein kinase 1',
      'Mitogen-Activated',
      'proline rich 5',
      'proline rich',
      'rich proline',
      'kinase',
      'protein 1',
      'LIF',
      'sec14',
      'MAPK1 kinase',
      'ERK2 mitogen-foo',
      'proline ric',
      'MPAK1 kinase',
    );
    for (let k = 0; k < 40; k++) {
      const g = pickName(named);
      const words = g.nameWords;
      const at = Math.floor(names.next() * words.length);
      queries.push(
        g.name!,
        words[at],
        words.slice(at, at + 2).join(' '),
        g.name!.replace(/-/g, ' '),
        [...words].reverse().join(' '),
        `${words[0]} ${(words[1] ?? '').slice(0, 3)}`,
        `${pickName(genes).symbol} ${words[at]}`,
      );
    }
    // A prefix matching more terms than fit in PREFIX_SHARD_LIMIT shards is cut short by design.
    const termCount = (q: string) =>
      docs.reduce((n, d) => n + d.terms.filter(([t]) => t.startsWith(q.toLowerCase())).length, 0);
    const compared = queries.filter((q) => q.split(/\s+/).every((t) => termCount(t) <= 2048));
    expect(compared.length).toBeGreaterThan(600);
    let withFuzzy = 0;
    let withManyPrefixes = 0;
    let withNames = 0;
    for (const q of compared) {
      const limit = q.length % 2 ? 25 : 10;
      const got = await search(data, q, limit);
      expect(got, q).toEqual(reference(q, limit));
      if (got.items.some((h) => h.match === 'fuzzy')) withFuzzy++;
      if (got.total > 100) withManyPrefixes++;
      if (got.items.some((h) => h.matched_field === 'name')) withNames++;
    }
    // The sample exercises every tier, prefixes with more matches than a page, and full names.
    expect(withFuzzy).toBeGreaterThan(20);
    expect(withManyPrefixes).toBeGreaterThan(20);
    expect(withNames).toBeGreaterThan(150);
  }, 120_000);
});
