// Search over the release's sharded MiniSearch index (contract/search.ts). Three tiers:
//   exact  — a whole symbol, id or name equals a query term (the term's shard);
//   prefix — a symbol, id or name starts with a query term (the shards of the term's range, at most
//            PREFIX_SHARD_LIMIT of them);
//   fuzzy  — a gene symbol one typo from a query term, counting a swap of two neighbours (TP35 for
//            TP53) as one edit (the typo shards of the term's head and tail).
// A document appears once, in its best tier. Within exact and prefix, MiniSearch's score ranks (a
// multi-term query adds the scores of its terms); within fuzzy, fewer edits rank first. Genes come
// before isoforms on equal ranks.
import type { SearchResult } from 'minisearch';
import { PREFIX_SHARD_LIMIT, SEARCH_FIELDS, allowedEdits, searchTerms, typoKeys } from './contract/search.js';
import { shardOf } from './contract/shards.js';
import { links, type SearchDirectory } from './contract/tree.js';
import type { SearchHitBody } from './contract/schemas.js';
import type { ReleaseData } from './release-data.js';

type Tier = 'exact' | 'prefix' | 'fuzzy';

/** Most telling field first: what a hit reports as `matched_field`. */
const FIELD_PRIORITY = ['symbol', 'gene_id', 'gene_id_versioned', 'transcript_name', 'transcript_id', 'transcript_id_unversioned'] as const;

interface Candidate {
  result: SearchResult;
  fields: Set<string>;
  score: number;
  /** Edits from the query (fuzzy tier only; 0 otherwise). */
  edits: number;
}

/** Edit distance counting insertions, deletions, substitutions and transpositions of neighbours
 * (optimal string alignment), or `max + 1` as soon as it must exceed `max`. */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev2: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2] + 1);
      row.push(d);
      best = Math.min(best, d);
    }
    if (best > max) return max + 1;
    prev2 = prev;
    prev = row;
  }
  return prev[b.length];
}

/** Index of the term shard whose range holds `term`, or -1 when it sorts before every shard. */
function shardOfTerm(dir: SearchDirectory, term: string): number {
  let lo = 0;
  let hi = dir.terms.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (dir.terms[mid].from <= term) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** The term shards a prefix query must look in: the prefix's own shard and every following shard
 * whose range starts with it, at most PREFIX_SHARD_LIMIT. */
function shardsOfPrefix(dir: SearchDirectory, prefix: string): number[] {
  const first = Math.max(0, shardOfTerm(dir, prefix));
  const out: number[] = [];
  for (let i = first; i < dir.terms.length && out.length < PREFIX_SHARD_LIMIT; i++) {
    if (i > first && !dir.terms[i].from.startsWith(prefix)) break;
    out.push(i);
  }
  return out;
}

function collect(into: Map<string, Candidate>, results: SearchResult[], edits = 0) {
  for (const r of results) {
    const fields = Object.values(r.match).flat();
    const had = into.get(r.id);
    if (had) {
      had.score += r.score;
      for (const f of fields) had.fields.add(f);
      had.edits = Math.min(had.edits, edits);
    } else into.set(r.id, { result: r, fields: new Set(fields), score: r.score, edits });
  }
}

async function tier(data: ReleaseData, dir: SearchDirectory, terms: string[], which: Tier): Promise<Map<string, Candidate>> {
  const found = new Map<string, Candidate>();
  for (const term of terms) {
    if (which === 'exact') {
      const shard = shardOfTerm(dir, term);
      if (shard >= 0) collect(found, (await data.termShard(shard)).search(term, { prefix: false, fuzzy: false }));
    } else if (which === 'prefix') {
      for (const shard of shardsOfPrefix(dir, term)) collect(found, (await data.termShard(shard)).search(term, { prefix: true, fuzzy: false }));
    } else {
      const allowed = allowedEdits(term);
      if (allowed === 0) continue;
      // The shards of the term's head and tail for each length a symbol one typo away can have.
      const shards = new Set<number>();
      for (let length = term.length - allowed; length <= term.length + allowed; length++) {
        if (length >= 3) for (const key of typoKeys(term, length)) shards.add(shardOf(key, dir.typo.shards));
      }
      const indexes = await Promise.all([...shards].map((shard) => data.typoShard(shard)));
      for (const index of indexes) {
        // MiniSearch counts a swap of neighbours as two edits: ask it for one more, then keep what
        // is within `allowed` by the distance that counts it as one.
        for (const r of index.search(term, { prefix: false, fuzzy: allowed + 1, maxFuzzy: allowed + 1 })) {
          const edits = Math.min(...r.terms.map((t) => editDistance(term, t, allowed)));
          // A symbol is filed under its head and its tail: count it once.
          if (edits <= allowed && !found.has(r.id)) collect(found, [r], edits);
        }
      }
    }
  }
  return found;
}

function matchedField(fields: Set<string>): string {
  return FIELD_PRIORITY.find((f) => fields.has(f)) ?? SEARCH_FIELDS[0];
}

function toHit(c: Candidate, tier: Tier): SearchHitBody {
  const r = c.result;
  const isGene = r.type === 'gene';
  // Document ids are `g:<gene id>` and `i:<transcript id>`.
  const id = isGene ? (r.gene as string) : String(r.id).slice(2);
  return {
    type: isGene ? 'gene' : 'isoform',
    id,
    symbol: r.gene_symbol as string,
    name: isGene ? null : (r.name as string),
    matched_field: matchedField(c.fields),
    match: tier,
    score: Math.round(c.score * 1000) / 1000,
    link: isGene ? links.gene(id) : links.isoform(id),
  };
}

const rank = (a: Candidate, b: Candidate) =>
  a.edits - b.edits || b.score - a.score || (a.result.type === b.result.type ? (a.result.id < b.result.id ? -1 : 1) : a.result.type === 'gene' ? -1 : 1);

export async function search(data: ReleaseData, query: string, limit: number): Promise<{ total: number; items: SearchHitBody[] }> {
  const dir = (await data.index()).search;
  const terms = [...new Set(searchTerms(query))];
  const seen = new Set<string>();
  const hits: SearchHitBody[] = [];
  for (const which of ['exact', 'prefix', 'fuzzy'] as Tier[]) {
    const found = [...(await tier(data, dir, terms, which)).values()].filter((c) => !seen.has(c.result.id)).sort(rank);
    for (const c of found) {
      seen.add(c.result.id);
      hits.push(toHit(c, which));
    }
  }
  return { total: hits.length, items: hits.slice(0, limit) };
}
