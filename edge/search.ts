// Search over the release's MiniSearch index. Three tiers, each ranked by MiniSearch's score within:
//   exact  — a whole symbol, id or name equals a query term;
//   prefix — a symbol, id or name starts with a query term;
//   fuzzy  — within a small edit distance (1 for terms of 3–4 characters, 2 from 5; a transposition
//            such as TP35 for TP53 is two edits), for typos.
// A document appears once, in its best tier. Genes come before isoforms on equal scores.
import type MiniSearch from 'minisearch';
import type { SearchResult } from 'minisearch';
import { SEARCH_FIELDS, type SearchDocument } from './contract/search.js';
import { links } from './contract/tree.js';
import type { SearchHitBody } from './contract/schemas.js';

type Tier = 'exact' | 'prefix' | 'fuzzy';

/** Most telling field first: what a hit reports as `matched_field`. */
const FIELD_PRIORITY = ['symbol', 'gene_id', 'gene_id_versioned', 'transcript_name', 'transcript_id', 'transcript_id_unversioned'] as const;

function fuzziness(term: string): number | false {
  if (term.length < 3) return false;
  return term.length <= 4 ? 1 : 2;
}

const TIER_OPTIONS: Record<Tier, { prefix: boolean; fuzzy: false | ((term: string) => number | false) }> = {
  exact: { prefix: false, fuzzy: false },
  prefix: { prefix: true, fuzzy: false },
  fuzzy: { prefix: false, fuzzy: fuzziness },
};

function matchedField(result: SearchResult): string {
  const fields = new Set(Object.values(result.match).flat());
  return FIELD_PRIORITY.find((f) => fields.has(f)) ?? SEARCH_FIELDS[0];
}

function toHit(result: SearchResult, tier: Tier): SearchHitBody {
  const isGene = result.type === 'gene';
  const id = isGene ? (result.gene as string) : (result.transcript_id as string);
  return {
    type: isGene ? 'gene' : 'isoform',
    id,
    symbol: result.gene_symbol as string,
    name: isGene ? null : (result.transcript_name as string),
    matched_field: matchedField(result),
    match: tier,
    score: Math.round(result.score * 1000) / 1000,
    link: isGene ? links.gene(id) : links.isoform(id),
  };
}

export function search(index: MiniSearch<SearchDocument>, query: string, limit: number): { total: number; items: SearchHitBody[] } {
  const seen = new Set<string>();
  const hits: SearchHitBody[] = [];
  for (const tier of ['exact', 'prefix', 'fuzzy'] as Tier[]) {
    const results = index
      .search(query, TIER_OPTIONS[tier])
      .filter((r) => !seen.has(r.id))
      .sort((a, b) => b.score - a.score || (a.type === b.type ? (a.id < b.id ? -1 : 1) : a.type === 'gene' ? -1 : 1));
    for (const r of results) {
      seen.add(r.id);
      hits.push(toHit(r, tier));
    }
  }
  return { total: hits.length, items: hits.slice(0, limit) };
}
