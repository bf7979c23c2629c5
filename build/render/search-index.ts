// The search index over gene symbols, gene ids, transcript ids and names, split into term shards
// (sorted term lists) and typo shards (MiniSearch indexes of gene symbols) as contract/search.ts
// describes.
import MiniSearch from 'minisearch';
import { treePaths, type SearchDirectory } from '../../edge/contract/tree.js';
import {
  SEARCH_FIELDS,
  TERMS_PER_SHARD,
  TYPO_KEYS_PER_SHARD,
  allowedEdits,
  searchTerms,
  typoIndexOptions,
  typoKeys,
  type SearchDocument,
  type TermDoc,
  type TermShardBody,
  type TypoDocument,
} from '../../edge/contract/search.js';
import { shardCountFor, shardOf } from '../../edge/contract/shards.js';
import type { GeneRow, IsoformRow } from './core-rows.js';
import type { TreeWriter } from './tree-writer.js';

export function searchDocuments(genes: GeneRow[], isoforms: IsoformRow[]): SearchDocument[] {
  const symbolOf = new Map(genes.map((g) => [g.gene_id, g.symbol]));
  const geneDocs: SearchDocument[] = genes.map((g) => ({
    id: `g:${g.gene_id}`,
    type: 'gene',
    symbol: g.symbol,
    gene_id: g.gene_id,
    gene_id_versioned: g.gene_id_versioned,
    transcript_id: null,
    transcript_id_unversioned: null,
    transcript_name: null,
    gene_symbol: g.symbol,
    name: null,
    synonyms: g.synonyms.length ? g.synonyms.join(' ') : null,
  }));
  const isoformDocs: SearchDocument[] = isoforms.map((i) => ({
    id: `i:${i.transcript_id}`,
    type: 'isoform',
    symbol: null,
    gene_id: null,
    gene_id_versioned: null,
    transcript_id: i.transcript_id,
    transcript_id_unversioned: i.transcript_id_unversioned,
    transcript_name: i.transcript_name,
    gene_symbol: symbolOf.get(i.gene_id)!,
    name: i.transcript_name,
    synonyms: null,
  }));
  return [...geneDocs, ...isoformDocs];
}

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Writes the term and fuzzy shards; returns their directory for edge/index.json. */
export async function renderSearchIndex(
  w: TreeWriter,
  genes: GeneRow[],
  isoforms: IsoformRow[],
): Promise<SearchDirectory> {
  const docs = searchDocuments(genes, isoforms);

  // Term shards: every (term, document, field), in term order, cut between distinct terms.
  const postings: { term: string; doc: number; field: number }[] = [];
  docs.forEach((doc, i) => {
    SEARCH_FIELDS.forEach((field, f) => {
      const value = doc[field];
      if (value !== null) for (const term of searchTerms(value)) postings.push({ term, doc: i, field: f });
    });
  });
  postings.sort((a, b) => byString(a.term, b.term) || a.doc - b.doc || a.field - b.field);
  const directory: SearchDirectory = { terms: [], typo: { shards: 0 }, documents: docs.length };
  let start = 0;
  while (start < postings.length) {
    const body: TermShardBody = { docs: [], terms: [], postings: [] };
    const local = new Map<number, number>();
    let end = start;
    while (end < postings.length && body.terms.length < TERMS_PER_SHARD) {
      const term = postings[end].term;
      const list: number[] = [];
      for (; end < postings.length && postings[end].term === term; end++) {
        const { doc, field } = postings[end];
        let d = local.get(doc);
        if (d === undefined) {
          local.set(doc, (d = body.docs.length));
          body.docs.push(termDoc(docs[doc], doc));
        }
        list.push(d, field);
      }
      body.terms.push(term);
      body.postings.push(list);
    }
    await w.json(treePaths.searchTerms(directory.terms.length), body);
    directory.terms.push({ from: body.terms[0], terms: body.terms.length });
    start = end;
  }

  // Typo shards: each gene symbol long enough for typos, under its head key and its tail key.
  const typoDocs: TypoDocument[] = [];
  docs.forEach((d, n) => {
    if (d.type === 'gene' && d.symbol !== null && allowedEdits(d.symbol.toLowerCase()) > 0)
      typoDocs.push({ id: d.id, symbol: d.symbol, n });
  });
  const count = shardCountFor(typoDocs.length * 2, TYPO_KEYS_PER_SHARD);
  const shards: Set<TypoDocument>[] = Array.from({ length: count }, () => new Set());
  for (const doc of typoDocs)
    for (const key of typoKeys(doc.symbol.toLowerCase())) shards[shardOf(key, count)].add(doc);
  for (const [i, shard] of shards.entries()) {
    const index = new MiniSearch<TypoDocument>(typoIndexOptions);
    index.addAll([...shard]);
    await w.json(treePaths.searchTypo(i), index);
  }
  directory.typo.shards = count;
  return directory;
}

function termDoc(doc: SearchDocument, n: number): TermDoc {
  return [doc.id, doc.gene_symbol, doc.name, n];
}
