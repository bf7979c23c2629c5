// The search index contract: the renderer builds a MiniSearch index with these options and the edge
// loads it with the very same ones (MiniSearch requires identical options on load).
import type { Options } from 'minisearch';

/** One indexed document. Indexed fields are null where they do not apply: an isoform document does
 * not index its gene's symbol or id, so a symbol query finds the gene itself rather than every
 * isoform of it; isoforms are found by their own ids and name. `gene_symbol`/`gene` are stored only. */
export interface SearchDocument {
  /** `g:<gene_id>` or `i:<transcript_id>`. */
  id: string;
  type: 'gene' | 'isoform';
  symbol: string | null;
  gene_id: string | null;
  gene_id_versioned: string | null;
  transcript_id: string | null;
  transcript_id_unversioned: string | null;
  transcript_name: string | null;
  gene_symbol: string;
  gene: string;
}

export const SEARCH_FIELDS = ['symbol', 'gene_id', 'gene_id_versioned', 'transcript_id', 'transcript_id_unversioned', 'transcript_name'] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

export const searchOptions: Options<SearchDocument> = {
  idField: 'id',
  fields: [...SEARCH_FIELDS],
  storeFields: ['type', 'gene_symbol', 'gene', 'transcript_id', 'transcript_name'],
  // Identifiers are single tokens: `TP53-201` and `ENST00000269305.9` must not split on - or .,
  // or an exact id would also match every id sharing a fragment. Whitespace separates terms.
  tokenize: (text: string) => text.split(/\s+/).filter(Boolean),
  processTerm: (term: string) => term.toLowerCase(),
};
