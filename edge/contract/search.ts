// The search index contract: the renderer builds MiniSearch indexes with these options and the edge
// loads them with the very same ones (MiniSearch requires identical options on load).
//
// A human-scale release has about a million searchable terms: one index would not fit an edge
// instance. The index is therefore split (the directory is in edge/index.json):
//   term shards  — every symbol, id and name, cut into ranges of about TERMS_PER_SHARD terms in term
//                  order; an exact or prefix match of a term is found in the shard(s) of its range;
//   fuzzy shards — gene symbols by length; a typo changes a symbol's length by at most the allowed
//                  edit distance, so a typo-tolerant search loads only the shards of nearby lengths,
//                  whatever the position of the typo (a first-letter typo included).
import type { Options } from 'minisearch';

/** One indexed document. Indexed fields are null where they do not apply: an isoform document does
 * not index its gene's symbol or id, so a symbol query finds the gene itself rather than every
 * isoform of it; isoforms are found by their own ids and name. In a term shard, only the fields
 * whose term falls in the shard's range are set. `gene_symbol`, `gene` and `name` are stored only. */
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
  /** The isoform's transcript name, stored for display (the indexed field may be null in a shard). */
  name: string | null;
}

export const SEARCH_FIELDS = ['symbol', 'gene_id', 'gene_id_versioned', 'transcript_id', 'transcript_id_unversioned', 'transcript_name'] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

/** Terms per term shard: a shard of this size loads (fetch + parse) in a few milliseconds. */
export const TERMS_PER_SHARD = 2048;
/** A prefix query reads at most this many term shards (a one-letter prefix can span hundreds); its
 * matches then come from the first shards in term order. */
export const PREFIX_SHARD_LIMIT = 3;

/** Edits a typo-tolerant match may differ by (insertion, deletion, substitution, or transposition of
 * two neighbours): 1 for terms of 3–5 characters, 2 from 6; none below 3, where a typo is a guess. */
export function allowedEdits(term: string): number {
  if (term.length < 3) return 0;
  return term.length <= 5 ? 1 : 2;
}

const tokenize = (text: string) => text.split(/\s+/).filter(Boolean);
const processTerm = (term: string) => term.toLowerCase();

/** The terms of a text, as the index stores them. */
export function searchTerms(text: string): string[] {
  return tokenize(text).map(processTerm);
}

export const searchOptions: Options<SearchDocument> = {
  idField: 'id',
  fields: [...SEARCH_FIELDS],
  storeFields: ['type', 'gene_symbol', 'gene', 'name'],
  // Identifiers are single tokens: `TP53-201` and `ENST00000269305.9` must not split on - or .,
  // or an exact id would also match every id sharing a fragment. Whitespace separates terms.
  tokenize,
  processTerm,
};
