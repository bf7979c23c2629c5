// The search index contract: the renderer builds MiniSearch indexes with these options and the edge
// loads them with the very same ones (MiniSearch requires identical options on load).
//
// A human-scale release has about a million searchable terms: one index would not fit an edge
// instance. The index is therefore split (the directory is in edge/index.json):
//   term shards — every symbol, id and name, cut into ranges of about TERMS_PER_SHARD terms in term
//                 order; an exact or prefix match of a term is found in the shard(s) of its range;
//   typo shards — gene symbols, each filed twice: under its length and head (first characters) and
//                 under its length and tail (last characters). One typo (an insertion, deletion,
//                 substitution or swap of neighbours) cannot touch both ends of a symbol, so a query
//                 finds every symbol one typo away in the shards of its own head and tail, for the
//                 three lengths the symbol can have (query length - 1, + 0, + 1): at most six small
//                 shards, wherever the typo is, the first letter included.
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

/** Edits a typo-tolerant match may differ by: one (an insertion, deletion, substitution, or swap of
 * two neighbours) for terms of 3 characters or more; none below, where any edit is another word. */
export function allowedEdits(term: string): number {
  return term.length < 3 ? 0 : 1;
}

/** Keys per typo shard (each symbol has two keys). */
export const TYPO_KEYS_PER_SHARD = 1024;

/** The typo-shard keys of a symbol of length `length` whose text starts and ends like `term`: its head
 * and tail, one character each up to 4 characters (a swap touches two neighbours, so in a 3- or
 * 4-letter word the first or the last letter survives), two from 5. */
export function typoKeys(term: string, length = term.length): [string, string] {
  const k = length <= 4 ? 1 : 2;
  return [`${length}^${term.slice(0, k)}`, `${length}$${term.slice(-k)}`];
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
