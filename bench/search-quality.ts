// Search quality over a rendered tree: sampled genes and isoforms queried by their exact symbol, id
// and name (each must come first), gene symbols with one typo (the gene must be in the top 3), and
// every named gene queried by its full name (recall@1: the gene must come first).
// Shared by the search benchmark (human scale) and test/search-quality.test.ts (the demo release).
import fg from 'fast-glob';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../build/generate/random.js';
import type { GeneBody, IsoformBody, SearchHitBody } from '../edge/contract/schemas.js';
import { allowedEdits, nameWords } from '../edge/contract/search.js';

export type SearchFn = (query: string, limit: number) => Promise<{ total: number; items: SearchHitBody[] }>;

export interface ExactQuery {
  query: string;
  kind: 'symbol' | 'gene id' | 'versioned gene id' | 'transcript id' | 'unversioned transcript id' | 'transcript name';
  type: 'gene' | 'isoform';
  id: string;
}

export interface TypoQuery {
  query: string;
  symbol: string;
  gene: string;
  edit: 'substitution' | 'deletion' | 'insertion' | 'transposition';
}

/** A gene's full name as the query ("mitogen-activated protein kinase 1" for MAPK1). */
export interface NameQuery {
  query: string;
  gene: string;
}

export interface QualitySample {
  exact: ExactQuery[];
  typo: TypoQuery[];
  /** Every gene of the tree that has a full name, in id order. */
  names: NameQuery[];
}

const ALPHABET = [...'abcdefghijklmnopqrstuvwxyz0123456789'];

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)];
}

function sampleOf<T>(rand: () => number, items: readonly T[], n: number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy.slice(0, n);
}

/** One random edit of a word: what a hurried typist does. */
export function typo(rand: () => number, word: string): { text: string; edit: TypoQuery['edit'] } {
  const edits: TypoQuery['edit'][] =
    word.length >= 2 ? ['substitution', 'deletion', 'insertion', 'transposition'] : ['substitution', 'insertion'];
  const edit = pick(rand, edits);
  const at = Math.floor(
    rand() * (edit === 'transposition' ? word.length - 1 : edit === 'insertion' ? word.length + 1 : word.length),
  );
  const letter = () => pick(rand, ALPHABET);
  switch (edit) {
    case 'substitution': {
      let c = letter();
      while (c === word[at].toLowerCase()) c = letter();
      return { text: word.slice(0, at) + c + word.slice(at + 1), edit };
    }
    case 'deletion':
      return { text: word.slice(0, at) + word.slice(at + 1), edit };
    case 'insertion':
      return { text: word.slice(0, at) + letter() + word.slice(at), edit };
    case 'transposition':
      return { text: word.slice(0, at) + word[at + 1] + word[at] + word.slice(at + 2), edit };
  }
}

const readJson = <T>(tree: string, path: string) => JSON.parse(readFileSync(join(tree, path), 'utf8')) as T;

/** Every named gene of a tree, queried by its full name. Reads every gene record: a human-scale tree
 * takes a minute or so. */
export function nameQueries(tree: string): NameQuery[] {
  const out: NameQuery[] = [];
  for (const path of fg.sync('api/v1/genes/*.json', { cwd: tree }).sort()) {
    const g = readJson<GeneBody>(tree, path);
    if (g.name !== null) out.push({ query: g.name, gene: g.gene_id });
  }
  return out;
}

/** Samples `n` genes and `n` isoforms of a tree for exact queries, `n` typo'd gene symbols, and the
 * full names of the sampled genes that have one, or with `everyName` of every named gene. */
export function sampleQueries(tree: string, n: number, seed = 7, everyName = false): QualitySample {
  const rng = new Rng(seed);
  const rand = () => rng.next();
  const read = <T>(path: string) => readJson<T>(tree, path);
  const genePaths = fg.sync('api/v1/genes/*.json', { cwd: tree }).sort();
  const isoformPaths = fg.sync('api/v1/isoforms/*.json', { cwd: tree }).sort();
  const genes = sampleOf(rand, genePaths, n).map((p) => read<GeneBody>(p));
  const isoforms = sampleOf(rand, isoformPaths, n).map((p) => read<IsoformBody>(p));

  const exact: ExactQuery[] = [];
  for (const g of genes) {
    // A symbol shared by several genes finds all of them first, in id order: not a one-answer query.
    exact.push({ query: g.symbol, kind: 'symbol', type: 'gene', id: g.gene_id });
    exact.push({ query: g.gene_id, kind: 'gene id', type: 'gene', id: g.gene_id });
    if (g.gene_id_versioned)
      exact.push({ query: g.gene_id_versioned, kind: 'versioned gene id', type: 'gene', id: g.gene_id });
  }
  for (const i of isoforms) {
    exact.push({ query: i.transcript_id, kind: 'transcript id', type: 'isoform', id: i.transcript_id });
    if (i.transcript_id_unversioned)
      exact.push({
        query: i.transcript_id_unversioned,
        kind: 'unversioned transcript id',
        type: 'isoform',
        id: i.transcript_id,
      });
    exact.push({ query: i.transcript_name, kind: 'transcript name', type: 'isoform', id: i.transcript_id });
  }

  const typos: TypoQuery[] = [];
  for (const g of genes) {
    if (allowedEdits(g.symbol) === 0) continue; // 1–2 letters: any edit is another word
    const t = typo(rand, g.symbol);
    typos.push({ query: t.text, symbol: g.symbol, gene: g.gene_id, edit: t.edit });
  }
  const names = everyName
    ? nameQueries(tree)
    : genes.flatMap((g) => (g.name === null ? [] : [{ query: g.name, gene: g.gene_id }]));
  return { exact, typo: typos, names };
}

export interface QualityResult {
  exactQueries: number;
  /** Exact queries whose own record was not the first hit (or, for a shared symbol, not among the exact
   * hits, which all come first; a symbol shared by more genes than a page holds fills it). */
  exactMisses: { query: ExactQuery; got: string[] }[];
  typoQueries: number;
  /** Typos that spell another exact term of the release (an exact hit for something else): not scored. */
  typoSkipped: number;
  typoInTop3: number;
  typoMisses: { query: TypoQuery; got: string[] }[];
  nameQueries: number;
  /** Full names whose gene came first (or a gene of the very same name: several genes can share one,
   * as `small Cajal body-specific RNA 17` names three on chr22). */
  nameFirst: number;
  nameMisses: { query: NameQuery; got: string[] }[];
}

/** Two full names are the same when their words are (case and punctuation aside, as search reads them). */
const sameName = (a: string, b: string) => nameWords(a).join(' ') === nameWords(b).join(' ');

export async function evaluateQuality(search: SearchFn, sample: QualitySample): Promise<QualityResult> {
  const exactMisses: QualityResult['exactMisses'] = [];
  for (const q of sample.exact) {
    const r = await search(q.query, 25);
    const exactHits = r.items.filter((h) => h.match === 'exact');
    const mine = (h: SearchHitBody) => h.type === q.type && h.id === q.id;
    const leading = r.items.findIndex((h) => h.match !== 'exact');
    const exactFirst = leading === -1 || exactHits.length === leading; // every exact hit before any other
    // A symbol more genes share than a page holds (39 genes are Y_RNA here, hundreds in GENCODE) fills
    // the page with exact hits of that symbol, in id order: its own gene may be on a later page.
    const sharedBeyondPage =
      q.kind === 'symbol' &&
      r.items.length === 25 &&
      exactHits.length === 25 &&
      r.total > 25 &&
      exactHits.every((h) => h.symbol.toLowerCase() === q.query.toLowerCase());
    const ok = exactFirst && (exactHits.length === 1 ? mine(exactHits[0]) : exactHits.some(mine) || sharedBeyondPage);
    if (!ok) exactMisses.push({ query: q, got: r.items.slice(0, 3).map((h) => `${h.type}:${h.id}:${h.match}`) });
  }
  let typoSkipped = 0;
  let typoInTop3 = 0;
  const typoMisses: QualityResult['typoMisses'] = [];
  for (const q of sample.typo) {
    const r = await search(q.query, 3);
    // A typo that is itself a symbol, id or name in the release is that record's exact query.
    if (r.items.some((h) => h.match === 'exact' && h.id !== q.gene)) {
      typoSkipped++;
      continue;
    }
    // A symbol shared by several genes (Y_RNA) cannot tell them apart: any of them is the answer.
    if (
      r.items.some((h) => h.type === 'gene' && (h.id === q.gene || h.symbol.toLowerCase() === q.symbol.toLowerCase()))
    )
      typoInTop3++;
    else typoMisses.push({ query: q, got: r.items.map((h) => `${h.type}:${h.id}:${h.match}`) });
  }
  let nameFirst = 0;
  const nameMisses: QualityResult['nameMisses'] = [];
  for (const q of sample.names) {
    const r = await search(q.query, 3);
    const [first] = r.items;
    if (first?.type === 'gene' && (first.id === q.gene || (first.name !== null && sameName(first.name, q.query))))
      nameFirst++;
    else nameMisses.push({ query: q, got: r.items.map((h) => `${h.type}:${h.id}:${h.symbol}:${h.name}`) });
  }
  return {
    exactQueries: sample.exact.length,
    exactMisses,
    typoQueries: sample.typo.length - typoSkipped,
    typoSkipped,
    typoInTop3,
    typoMisses,
    nameQueries: sample.names.length,
    nameFirst,
    nameMisses,
  };
}
