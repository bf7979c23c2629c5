// The search index contract: the renderer writes the index in this shape and the edge reads it.
//
// A human-scale release has about a million searchable terms: one index would not fit an edge
// instance. The index is therefore split (the directory is in edge/index.json):
//   term shards — every symbol, id and name, and every word of a gene's full name, cut into ranges of
//                 about TERMS_PER_SHARD terms in term order (fewer where their documents would pass
//                 TERM_SHARD_BYTES), stored as a sorted term list with each term's documents
//                 (TermShardBody). An
//                 exact or prefix match is a binary search in the shard(s) of the term's range. A
//                 sorted list rather than a MiniSearch index: it parses several times faster (no radix
//                 tree to rebuild on load) and a prefix is a contiguous run of it, so the edge ranks
//                 the best prefix matches without scoring thousands of them;
//   typo shards — MiniSearch indexes of gene symbols (its fuzzy search is what they are for), each
//                 symbol filed twice: under its length and head (first characters) and under its
//                 length and tail (last characters). One typo (an insertion, deletion, substitution
//                 or swap of neighbours) cannot touch both ends of a symbol, so a query finds every
//                 symbol one typo away in the shards of its own head and tail, for the three lengths
//                 the symbol can have (query length - 1, + 0, + 1): at most six small shards,
//                 wherever the typo is, the first letter included.
import type { Options } from 'minisearch';

/** A searchable record, as the renderer gathers it. Indexed fields are null where they do not apply:
 * an isoform does not carry its gene's symbol, id or full name, so a query finds the gene itself
 * rather than every isoform of it; isoforms are found by their own ids and name. */
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
  /** The gene's symbol (an isoform's gene), shown in hits. */
  gene_symbol: string;
  /** What hits show as `name`: a gene's full name (null without one), an isoform's transcript name. */
  shown_name: string | null;
  /** A gene's other symbols, space-separated (one term each); null without. */
  synonyms: string | null;
  /** A gene's full name ("mitogen-activated protein kinase 1"), indexed by its words (nameWords);
   * null for an isoform and for a gene without one. */
  name: string | null;
}

/** Indexed fields. The order is part of the index format (postings name a field by its index):
 * new fields go at the end. */
export const SEARCH_FIELDS = [
  'symbol',
  'gene_id',
  'gene_id_versioned',
  'transcript_id',
  'transcript_id_unversioned',
  'transcript_name',
  'synonyms',
  'name',
] as const;

/** What a word of a gene's full name scores: less than a whole symbol or id (TP53 finds TP53 before
 * TRIAP1, "TP53 regulated inhibitor of apoptosis 1"), more than half, so two words of a name outrank
 * one symbol (edge/search-engine.ts has the rest of the name ranking). */
export const NAME_WORD_WEIGHT = 0.6;

/** What a match through each field scores, as a share of a full match: a synonym (ERK2 for MAPK1)
 * ranks after the gene or isoform whose own symbol, id or name the query is. */
export const FIELD_WEIGHTS: readonly number[] = SEARCH_FIELDS.map((f) =>
  f === 'synonyms' ? 0.5 : f === 'name' ? NAME_WORD_WEIGHT : 1,
);

/** A document as a term shard lists it: [document id (`g:<gene_id>` or `i:<transcript_id>`), gene
 * symbol, shown name (a gene's full name or null, an isoform's transcript name), document number].
 * The number (0 … documents - 1, the same in every shard) lets the edge tell documents apart with a
 * bitset rather than a set of ids; the name lets it rank full-name matches and show hits without
 * reading the records. */
export type TermDoc = [id: string, symbol: string, name: string | null, n: number];

/** `edge/search/terms/{shard}.json`: a range of the release's terms in sorted order (code-unit order,
 * lower case), each with the documents it names. */
export interface TermShardBody {
  docs: TermDoc[];
  /** Distinct and sorted. */
  terms: string[];
  /** postings[i]: the documents terms[i] names, flattened as [doc, field, doc, field, …]: an index in
   * `docs` and an index in SEARCH_FIELDS. */
  postings: number[][];
}

/** A document of a typo shard: a gene, indexed and stored by its symbol, stored with its full name. */
export interface TypoDocument {
  /** `g:<gene_id>`. */
  id: string;
  symbol: string;
  name: string | null;
  /** The document's number (TermDoc). */
  n: number;
}

/** Terms per term shard: a shard of this size loads (fetch + parse) in a few milliseconds. */
export const TERMS_PER_SHARD = 2048;
/** About the most bytes a term shard holds before it is cut (between terms, so a single word of
 * thousands of full names, "protein", still has them all in one shard): a query loads a shard per
 * word, and a new edge instance parses all of each shard it reads, so the smaller the shard the less a
 * cold search pays; each shard more lengthens edge/index.json, which every new instance reads. */
export const TERM_SHARD_BYTES = 128 * 1024;
/** A word is common when more than this share of the genes with a full name hold it ("protein",
 * "pseudogene", "family"). In a query with a rarer word that the index knows, a common word finds no
 * genes by itself: it only adds to the score of the genes the other words find, checked against their
 * names (Elasticsearch's common terms query and MySQL's natural-language full-text search treat
 * frequent words so); in a query of common words only, the least common of them finds the genes. A
 * full name then costs the postings of its telling words, not the thousands of genes that share
 * "protein", and the genes holding only its common words, which would rank below the name itself, are
 * not among the hits. A share, not a count, so a small release behaves as a large one. */
export const COMMON_NAME_WORD_SHARE = 1 / 40;
/** A prefix query reads at most this many term shards (a one-letter prefix can span hundreds), sized
 * with TERM_SHARD_BYTES; its matches then come from the first shards in term order. */
export const PREFIX_SHARD_LIMIT = 6;

/** Edits a typo-tolerant match may differ by: one (an insertion, deletion, substitution, or swap of
 * two neighbours) for terms of 3 characters or more; none below, where any edit is another word. */
export function allowedEdits(term: string): number {
  return term.length < 3 ? 0 : 1;
}

/** Keys per typo shard (each symbol has two keys). */
export const TYPO_KEYS_PER_SHARD = 256;

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

/** The words of a full name or of a query, as the name field indexes them: lower-cased runs of letters
 * and digits, so "mitogen-activated" is two words and a query finds it written either way, and
 * punctuation ("1/OR22-5 (pseudogene)") never sticks to a word. */
export function nameWords(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Options of the typo shards' MiniSearch indexes: the renderer builds them and the edge loads them
 * with the very same ones (MiniSearch requires identical options on load). */
export const typoIndexOptions: Options<TypoDocument> = {
  idField: 'id',
  fields: ['symbol'],
  storeFields: ['symbol', 'name', 'n'],
  // Symbols are single tokens (`Y_RNA`, `HLA-A`); whitespace separates query terms.
  tokenize,
  processTerm,
};
