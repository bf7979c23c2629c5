// The search index (MiniSearch, serialized) over gene symbols, gene ids, transcript ids and names,
// split into term shards and typo shards as contract/search.ts describes.
import MiniSearch from 'minisearch';
import { treePaths, type SearchDirectory } from '../../edge/contract/tree.js';
import { SEARCH_FIELDS, TERMS_PER_SHARD, TYPO_KEYS_PER_SHARD, allowedEdits, searchOptions, searchTerms, typoKeys, type SearchDocument, type SearchField } from '../../edge/contract/search.js';
import { shardCountFor, shardOf } from '../../edge/contract/shards.js';
import type { GeneRow, IsoformRow } from './load.js';
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
    gene: g.gene_id,
    name: null,
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
    gene: i.gene_id,
    name: i.transcript_name,
  }));
  return [...geneDocs, ...isoformDocs];
}

const NO_FIELDS = Object.fromEntries(SEARCH_FIELDS.map((f) => [f, null])) as Record<SearchField, null>;

/** A document reduced to the given fields (the others null): what one shard indexes of it. */
function only(doc: SearchDocument, fields: Iterable<SearchField>): SearchDocument {
  const out: SearchDocument = { ...doc, ...NO_FIELDS };
  for (const f of fields) out[f] = doc[f];
  return out;
}

const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Writes the term and fuzzy shards; returns their directory for edge/index.json. */
export async function renderSearchIndex(w: TreeWriter, genes: GeneRow[], isoforms: IsoformRow[]): Promise<SearchDirectory> {
  const docs = searchDocuments(genes, isoforms);

  // Term shards: every (term, document, field), in term order, cut between distinct terms.
  const postings: { term: string; doc: number; field: SearchField }[] = [];
  docs.forEach((doc, i) => {
    for (const field of SEARCH_FIELDS) {
      const value = doc[field];
      if (value !== null) for (const term of searchTerms(value)) postings.push({ term, doc: i, field });
    }
  });
  postings.sort((a, b) => byString(a.term, b.term) || a.doc - b.doc);
  const directory: SearchDirectory = { terms: [], typo: { shards: 0 } };
  let start = 0;
  while (start < postings.length) {
    let end = start;
    let terms = 0;
    while (end < postings.length && terms < TERMS_PER_SHARD) {
      const term = postings[end].term;
      while (end < postings.length && postings[end].term === term) end++;
      terms++;
    }
    const fieldsOf = new Map<number, Set<SearchField>>();
    for (let k = start; k < end; k++) {
      const p = postings[k];
      if (!fieldsOf.has(p.doc)) fieldsOf.set(p.doc, new Set());
      fieldsOf.get(p.doc)!.add(p.field);
    }
    const index = new MiniSearch<SearchDocument>(searchOptions);
    index.addAll([...fieldsOf.keys()].sort((a, b) => a - b).map((d) => only(docs[d], fieldsOf.get(d)!)));
    await w.json(treePaths.searchTerms(directory.terms.length), index);
    directory.terms.push({ from: postings[start].term, terms });
    start = end;
  }

  // Typo shards: each gene symbol long enough for typos, under its head key and its tail key.
  const typoDocs = docs.filter((d) => d.type === 'gene' && d.symbol !== null && allowedEdits(d.symbol.toLowerCase()) > 0);
  const count = shardCountFor(typoDocs.length * 2, TYPO_KEYS_PER_SHARD);
  const shards: Set<SearchDocument>[] = Array.from({ length: count }, () => new Set());
  for (const doc of typoDocs) for (const key of typoKeys(doc.symbol!.toLowerCase())) shards[shardOf(key, count)].add(doc);
  for (const [i, shard] of shards.entries()) {
    const index = new MiniSearch<SearchDocument>(searchOptions);
    index.addAll([...shard].map((d) => only(d, ['symbol'])));
    await w.json(treePaths.searchTypo(i), index);
  }
  directory.typo.shards = count;
  return directory;
}
