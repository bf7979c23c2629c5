// The search index (MiniSearch, serialized) over gene symbols, gene ids, transcript ids and names.
import MiniSearch from 'minisearch';
import { treePaths } from '../../edge/contract/tree.js';
import { searchOptions, type SearchDocument } from '../../edge/contract/search.js';
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
  }));
  return [...geneDocs, ...isoformDocs];
}

export async function renderSearchIndex(w: TreeWriter, genes: GeneRow[], isoforms: IsoformRow[]): Promise<number> {
  const index = new MiniSearch<SearchDocument>(searchOptions);
  const docs = searchDocuments(genes, isoforms);
  index.addAll(docs);
  await w.json(treePaths.searchIndex, index);
  return docs.length;
}
