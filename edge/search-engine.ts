// Search over the release's sharded index (contract/search.ts). Three tiers, each document in its best:
//   exact  — a whole symbol, id or name equals a query term, or a gene's full name holds every word of
//            a query term (a binary search in the term's or word's shard);
//   prefix — a symbol, id, name or word of a full name starts with a query term (a run of the shards of
//            the term's range, at most PREFIX_SHARD_LIMIT of them);
//   fuzzy  — a gene symbol one typo from a query term, counting a swap of two neighbours (TP35 for
//            TP53) as one edit (typo-shard.ts, in the typo shards of the term's head and tail).
// Scores, summed over the query's terms (a document matching two terms ranks above one matching one):
//   exact 1; prefix the share of the matched term that was typed (query term length ÷ term length,
//   so TP53 ranks above TP53BP1 for `tp5`); fuzzy 0.5 for a swap of neighbours or a left-out letter
//   and 0.25 for a wrong or extra letter. The fuzzy weights are a noisy-channel prior: a swap or an
//   omission at a given place is one specific slip, while a wrong or extra letter there is one of
//   about 36, so any particular one is far less likely. A match through a gene's synonym scores
//   half (FIELD_WEIGHTS): another record's own symbol, id or name is the likelier meaning. A word of a
//   gene's full name scores NAME_WORD_WEIGHT (a term of several words, "mitogen-activated", when the
//   name holds them all; each term counts its best match, a symbol or the name), and a name holding
//   every word of the query gains the bonuses of name-match.ts (phrase, whole name, length).
// A query finds records through its telling strings, not through the common words of full names
// (contract/search.ts COMMON_NAME_WORD_SHARE, listed by the build in the edge index), which only score
// the genes found, checked against their names; a query of common words only, through its least common.
// A one-word query goes through every tier; a longer one through prefix and fuzzy only in its words
// that matched nothing exactly (a word being typed, a typo), so a full name, whole words, costs no
// prefix run or typo shard per word.
// Within a tier, higher scores first, then genes before isoforms, then by id. Only the best `limit`
// of each tier are ranked (no tier sorts thousands of prefix matches); `total` counts them all.
import {
  FIELD_WEIGHTS,
  PREFIX_SHARD_LIMIT,
  SEARCH_FIELDS,
  allowedEdits,
  nameWords,
  typoKeys,
} from './contract/search.js';
import { shardOf } from './contract/shards.js';
import { nameBonus, nameShare, parseQuery, wordsInName, type ParsedQuery } from './name-match.js';
import { links, type SearchDirectory } from './contract/tree.js';
import type { SearchHitBody } from './contract/schemas.js';
import type { ReleaseData } from './release-data.js';
import type { TermShard } from './term-shard.js';
import { DocumentSet } from './document-set.js';
import { slotsOf } from './document-slots.js';

type Tier = 'exact' | 'prefix' | 'fuzzy';

/** Most telling field first: what a hit reports as `matched_field`. */
const FIELD_PRIORITY = [
  'symbol',
  'gene_id',
  'gene_id_versioned',
  'transcript_name',
  'transcript_id',
  'transcript_id_unversioned',
  'name',
  'synonyms',
] as const;
const FIELD_BIT = (field: string) => 1 << SEARCH_FIELDS.indexOf(field as (typeof SEARCH_FIELDS)[number]);
const NAME_FIELD = SEARCH_FIELDS.indexOf('name');

interface Candidate {
  /** Document number (contract/search.ts TermDoc). */
  n: number;
  /** Document id: `g:<gene id>` or `i:<transcript id>` (so id order puts genes first). */
  id: string;
  symbol: string;
  /** A gene's full name or an isoform's transcript name (TermDoc). */
  name: string | null;
  /** The fields that matched, one bit per SEARCH_FIELDS index. */
  fields: number;
  score: number;
  /** Exact tier: the query's words (ParsedQuery.words, one bit each) the gene's full name holds. */
  words: number;
}

/** The documents one query term matches in a tier, with that term's score for each. */
type TermMatches = Map<number, Candidate>;

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

/** The weight of a one-edit typo `query` of `symbol` (see the scores above). */
export function typoWeight(query: string, symbol: string): number {
  if (query.length < symbol.length) return 0.5; // a letter left out
  if (query.length === symbol.length) {
    let differ = 0;
    for (let i = 0; i < query.length; i++) if (query[i] !== symbol[i]) differ++;
    if (differ === 2) return 0.5; // two neighbours swapped (one edit apart, so not two substitutions)
  }
  return 0.25; // a wrong or an extra letter
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

/** Adds the documents of terms [from, to) of a shard, each scored by `score(term)` (a document
 * matching through several terms or fields keeps its best score and every field), but for those
 * matching through the field numbered `leaveOut`. */
function addTerms(
  into: TermMatches,
  shard: TermShard,
  from: number,
  to: number,
  score: (term: string) => number,
  skip: Skip,
  leaveOut = -1,
): void {
  for (let t = from; t < to; t++) {
    const termScore = score(shard.terms[t]);
    const list = shard.postings[t];
    for (let k = 0; k < list.length; k += 2) {
      if (list[k + 1] === leaveOut) continue;
      const doc = shard.docs[list[k]];
      const n = doc[3];
      if (skip(n)) continue;
      const s = termScore * FIELD_WEIGHTS[list[k + 1]];
      const bit = 1 << list[k + 1];
      const had = into.get(n);
      if (had) {
        had.fields |= bit;
        if (s > had.score) had.score = s;
      } else into.set(n, { n, id: doc[0], symbol: doc[1], name: doc[2], fields: bit, score: s, words: 0 });
    }
  }
}

/** Documents already placed in an earlier tier, by number. */
type Skip = (n: number) => boolean;

/** The prefix tier of a one-term query, without a candidate per match: a 3-letter prefix can match
 * thousands. Counts the distinct documents, keeps the best `k` (a document's score is that of its
 * shortest matching term), then gathers the matched fields of those `k` only. */
function bestPrefixMatches(
  shards: TermShard[],
  term: string,
  k: number,
  skip: Skip,
  matched: DocumentSet,
): Candidate[] {
  // Plain loops, no callbacks: this runs once per match, thousands of times for a short prefix.
  const top: Candidate[] = [];
  const typed = term.length;
  const ranges = shards.map((shard) => shard.prefixRange(term));
  for (let s = 0; s < shards.length; s++) {
    const { terms, postings, docs } = shards[s];
    for (let t = ranges[s][0]; t < ranges[s][1]; t++) {
      const termScore = typed / terms[t].length;
      const list = postings[t];
      for (let p = 0; p < list.length; p += 2) {
        const doc = docs[list[p]];
        const n = doc[3];
        if (skip(n)) continue;
        const score = termScore * FIELD_WEIGHTS[list[p + 1]];
        matched.add(n);
        // A match that cannot enter the best k (nor raise a document already there) is only counted.
        if (k === 0) continue;
        if (top.length === k) {
          const last = top[k - 1];
          if (score < last.score || (score === last.score && doc[0] >= last.id)) continue;
        }
        let had = -1;
        for (let i = 0; i < top.length; i++) if (top[i].n === n) had = i;
        if (had >= 0) {
          if (score <= top[had].score) continue;
          top.splice(had, 1);
        }
        const c: Candidate = { n, id: doc[0], symbol: doc[1], name: doc[2], fields: 0, score, words: 0 };
        let at = top.length;
        while (at > 0 && ranksBefore(c, top[at - 1])) at--;
        top.splice(at, 0, c);
        if (top.length > k) top.pop();
      }
    }
  }
  // The fields through which the best k matched (a document can match through several).
  for (let s = 0; s < shards.length && top.length > 0; s++) {
    const { postings, docs } = shards[s];
    for (let t = ranges[s][0]; t < ranges[s][1]; t++) {
      const list = postings[t];
      for (let p = 0; p < list.length; p += 2) {
        const n = docs[list[p]][3];
        for (let i = 0; i < top.length; i++) if (top[i].n === n) top[i].fields |= 1 << list[p + 1];
      }
    }
  }
  return top;
}

/** Where a term is in the index: its shard and its place there, or null. */
async function findTerm(
  data: ReleaseData,
  dir: SearchDirectory,
  term: string,
): Promise<{ shard: TermShard; t: number } | null> {
  const n = shardOfTerm(dir, term);
  if (n < 0) return null;
  const shard = await data.termShard(n);
  const t = shard.find(term);
  return t < 0 ? null : { shard, t };
}

/** Whether a document of `score` and `id` enters the best `k` so far (`top`, ranked). */
function enters(top: Candidate[], k: number, score: number, id: string): boolean {
  if (top.length < k) return true;
  const last = top[k - 1];
  return score > last.score || (score === last.score && id < last.id);
}

/** Puts `c` into `top` at its rank, keeping the best `k`. */
function place(top: Candidate[], k: number, c: Candidate): void {
  let at = top.length;
  while (at > 0 && ranksBefore(c, top[at - 1])) at--;
  top.splice(at, 0, c);
  if (top.length > k) top.pop();
}

/** The release's common name words (contract/search.ts COMMON_NAME_WORD_SHARE), each with how many
 * genes' names hold it. */
const commonWordMaps = new WeakMap<SearchDirectory, Map<string, number>>();
function commonWords(dir: SearchDirectory): Map<string, number> {
  let map = commonWordMaps.get(dir);
  if (!map) commonWordMaps.set(dir, (map = new Map(Object.entries(dir.common_words ?? {}))));
  return map;
}

/** The exact tier. Each term scores its best: a whole symbol, id, transcript name or synonym it is, or
 * a gene's full name holding all its words; a name holding every word of the query gains the name
 * bonuses. Also says which terms matched anything (the later tiers of a longer query take the rest).
 * The genes are found by the query's telling strings (its terms and words that are not common words
 * of names), or when the index has none of them by its least common word; the other common words are
 * not read but checked against the names of the genes found. */
async function exactTier(
  data: ReleaseData,
  dir: SearchDirectory,
  q: ParsedQuery,
  k: number,
): Promise<TierResult & { termMatched: boolean[] }> {
  const common = commonWords(dir);
  const isCommon = (s: string) => {
    const words = nameWords(s);
    return words.length > 0 && words.every((w) => common.has(w));
  };
  // Every string to read looked up first: the rest runs without a pause, on slots every search shares.
  const where = new Map<string, { shard: TermShard; t: number } | null>();
  const look = (strings: string[]) => Promise.all(strings.map(async (s) => where.set(s, await findTerm(data, dir, s))));
  const telling = [...new Set([...q.terms, ...q.words])].filter((s) => !isCommon(s));
  await look(telling);
  if (!telling.some((s) => where.get(s))) {
    const commons = q.words.filter((w) => common.has(w));
    if (commons.length) await look([commons.reduce((a, b) => (common.get(b)! < common.get(a)! ? b : a))]);
  }
  // The query's words left unread, checked against each found gene's name (one bit each).
  const unread = q.words.reduce((mask, w, j) => (where.has(w) ? mask : mask | (1 << j)), 0);
  // Per term: the records it names through any field but the name (a few at most).
  const perTerm = q.terms.map((term) => {
    const matches: TermMatches = new Map();
    const at = where.get(term);
    if (at)
      addTerms(
        matches,
        at.shard,
        at.t,
        at.t + 1,
        () => 1,
        () => false,
        NAME_FIELD,
      );
    return matches;
  });
  const slots = slotsOf(dir, dir.documents);
  try {
    // The genes whose full name holds each word, one bit per word.
    q.words.forEach((word, j) => {
      const at = where.get(word);
      if (!at) return;
      const { docs, postings } = at.shard;
      const list = postings[at.t];
      for (let p = 0; p < list.length; p += 2)
        if (list[p + 1] === NAME_FIELD) slots.masks[slots.slotOf(docs[list[p]])] |= 1 << j;
    });
    for (const matches of perTerm) for (const c of matches.values()) slots.slotOf([c.id, c.symbol, c.name, c.n]);
    if (unread !== 0)
      for (let s = 0; s < slots.docs.length; s++) {
        const name = slots.docs[s][2];
        // An isoform's name is its transcript name, not a full name: only genes' names hold words.
        if (name === null || slots.docs[s][0].startsWith('i:')) continue;
        slots.masks[s] |= wordsInName(name, q.words, unread);
      }
    const matched = new DocumentSet(dir.documents);
    // A term left unread is a known word of names, matched or not: not one for the later tiers.
    const termMatched = q.terms.map((term) => !where.has(term));
    const top: Candidate[] = [];
    for (let s = 0; s < slots.docs.length; s++) {
      const doc = slots.docs[s];
      const words = slots.masks[s];
      let score = 0;
      let fields = 0;
      for (let i = 0; i < q.terms.length; i++) {
        const own = perTerm[i].size ? perTerm[i].get(doc[3]) : undefined;
        const share = nameShare(words, q.termMasks[i]);
        if (own) fields |= own.fields;
        if (share > 0) fields |= 1 << NAME_FIELD;
        const best = Math.max(own?.score ?? 0, share);
        if (best > 0) termMatched[i] = true;
        score += best;
      }
      // A name holding only some words of each term matches nothing: the gene is not in this tier.
      if (score === 0) continue;
      if (q.allWords !== 0 && words === q.allWords && doc[2] !== null) score += nameBonus(q.sequence, doc[2]);
      matched.add(doc[3]);
      if (enters(top, k, score, doc[0]))
        place(top, k, { n: doc[3], id: doc[0], symbol: doc[1], name: doc[2], fields, score, words });
    }
    return { size: matched.size, has: (n) => matched.has(n), top, termMatched };
  } finally {
    slots.clear();
  }
}

/** The documents the prefix or the fuzzy tier matches for one query term. */
async function matchTerm(
  data: ReleaseData,
  dir: SearchDirectory,
  term: string,
  tier: 'prefix' | 'fuzzy',
  skip: Skip,
): Promise<TermMatches> {
  const found: TermMatches = new Map();
  if (tier === 'prefix') {
    const typed = term.length;
    for (const shard of await Promise.all(shardsOfPrefix(dir, term).map((n) => data.termShard(n)))) {
      const [from, to] = shard.prefixRange(term);
      addTerms(found, shard, from, to, (t) => typed / t.length, skip);
    }
  } else {
    const allowed = allowedEdits(term);
    if (allowed === 0) return found;
    // The shards of the term's head and tail for each length a symbol one typo away can have.
    const shards = new Set<number>();
    for (let length = term.length - allowed; length <= term.length + allowed; length++) {
      if (length >= 3) for (const key of typoKeys(term, length)) shards.add(shardOf(key, dir.typo.shards));
    }
    for (const shard of await Promise.all([...shards].map((n) => data.typoShard(n)))) {
      for (const doc of shard.near(term)) {
        // A symbol is filed under its head and its tail: it may come up in two shards.
        if (found.has(doc.n) || skip(doc.n)) continue;
        const symbol = doc.symbol.toLowerCase();
        if (symbol === term) continue;
        found.set(doc.n, {
          n: doc.n,
          id: doc.id,
          symbol: doc.symbol,
          name: doc.name,
          fields: FIELD_BIT('symbol'),
          score: typoWeight(term, symbol),
          words: 0,
        });
      }
    }
  }
  return found;
}

/** The prefix or fuzzy tier's matches over every query term: scores add up, fields join. */
async function matchTier(
  data: ReleaseData,
  dir: SearchDirectory,
  terms: string[],
  tier: 'prefix' | 'fuzzy',
  skip: Skip,
): Promise<TermMatches> {
  const perTerm = await Promise.all(terms.map((term) => matchTerm(data, dir, term, tier, skip)));
  if (perTerm.length === 1) return perTerm[0];
  const all: TermMatches = new Map();
  for (const matches of perTerm) {
    for (const c of matches.values()) {
      const had = all.get(c.n);
      if (had) {
        had.score += c.score;
        had.fields |= c.fields;
      } else all.set(c.n, { ...c });
    }
  }
  return all;
}

function ranksBefore(a: Candidate, b: Candidate): boolean {
  return a.score > b.score || (a.score === b.score && a.id < b.id);
}

/** The best `k` candidates, ranked: one pass keeping a short sorted list, not a sort of them all. */
function best(candidates: Iterable<Candidate>, k: number): Candidate[] {
  const top: Candidate[] = [];
  if (k <= 0) return top;
  for (const c of candidates) if (enters(top, k, c.score, c.id)) place(top, k, c);
  return top;
}

function matchedField(fields: number): string {
  return FIELD_PRIORITY.find((f) => fields & FIELD_BIT(f)) ?? SEARCH_FIELDS[0];
}

function toHit(c: Candidate, tier: Tier): SearchHitBody {
  const isGene = c.id.startsWith('g:');
  const id = c.id.slice(2);
  return {
    type: isGene ? 'gene' : 'isoform',
    id,
    symbol: c.symbol,
    name: c.name,
    matched_field: matchedField(c.fields),
    match: tier,
    score: Math.round(c.score * 1000) / 1000,
    link: isGene ? links.gene(id) : links.isoform(id),
  };
}

/** What a tier found: how many documents, whether it found one, and its best. */
interface TierResult {
  size: number;
  has(n: number): boolean;
  top: Candidate[];
}

/** The prefix or the fuzzy tier over `terms`. */
async function laterTier(
  data: ReleaseData,
  dir: SearchDirectory,
  terms: string[],
  tier: 'prefix' | 'fuzzy',
  k: number,
  skip: Skip,
): Promise<TierResult> {
  if (tier === 'prefix' && terms.length === 1) {
    const shards = await Promise.all(shardsOfPrefix(dir, terms[0]).map((n) => data.termShard(n)));
    const matched = new DocumentSet(dir.documents);
    const top = bestPrefixMatches(shards, terms[0], k, skip, matched);
    return { size: matched.size, has: (n) => matched.has(n), top };
  }
  const found = await matchTier(data, dir, terms, tier, skip);
  return { size: found.size, has: (n) => found.has(n), top: best(found.values(), k) };
}

export async function search(
  data: ReleaseData,
  query: string,
  limit: number,
): Promise<{ total: number; items: SearchHitBody[] }> {
  const dir = (await data.index()).search;
  const parsed = parseQuery(query);
  const earlier: TierResult[] = [];
  const skip: Skip = (n) => {
    for (const r of earlier) if (r.has(n)) return true;
    return false;
  };
  const exact = await exactTier(data, dir, parsed, limit);
  const items = exact.top.map((c) => toHit(c, 'exact'));
  let total = exact.size;
  earlier.push(exact);
  // A one-word query is also matched by prefix and by typo; a longer one, only in its words that
  // matched nothing exactly (a word being typed, a typo): a full name is whole words.
  const rest = parsed.terms.length === 1 ? parsed.terms : parsed.terms.filter((_, i) => !exact.termMatched[i]);
  for (const tier of ['prefix', 'fuzzy'] as const) {
    const found = rest.length
      ? await laterTier(data, dir, rest, tier, limit - items.length, skip)
      : { size: 0, has: () => false, top: [] };
    for (const c of found.top) items.push(toHit(c, tier));
    total += found.size;
    earlier.push(found);
  }
  return { total, items };
}
