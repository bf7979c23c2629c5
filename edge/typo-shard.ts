// A loaded typo shard of the search index (contract/search.ts): a MiniSearch index of gene symbols,
// and the same symbols by spelling. MiniSearch finds the symbols one insertion, deletion or
// substitution away; a swap of neighbours is two such edits, which would make it search (and return)
// far more, so swaps are looked up by spelling instead.
import MiniSearch, { type SearchResult } from 'minisearch';
import type { TypoDocument } from './contract/search.js';

/** A search result as the document it stored (a gene without a full name stored none). */
const documentOf = (r: SearchResult): TypoDocument => ({
  id: r.id as string,
  symbol: r.symbol as string,
  name: (r.name as string | undefined) ?? null,
  n: r.n as number,
});

export class TypoShard {
  /** Lower-cased symbol → the genes it names. */
  private readonly bySymbol = new Map<string, TypoDocument[]>();

  constructor(private readonly index: MiniSearch<TypoDocument>) {
    for (const r of index.search(MiniSearch.wildcard)) {
      const doc = documentOf(r);
      const key = doc.symbol.toLowerCase();
      const named = this.bySymbol.get(key);
      if (named) named.push(doc);
      else this.bySymbol.set(key, [doc]);
    }
  }

  /** The genes whose symbol is `term` or one typo from it (a wrong, missing or extra letter, or two
   * neighbours swapped), each once. */
  near(term: string): TypoDocument[] {
    const out: TypoDocument[] = [];
    for (const r of this.index.search(term, { prefix: false, fuzzy: 1 })) out.push(documentOf(r));
    for (let i = 0; i + 1 < term.length; i++) {
      if (term[i] === term[i + 1]) continue;
      const swapped = term.slice(0, i) + term[i + 1] + term[i] + term.slice(i + 2);
      const named = this.bySymbol.get(swapped);
      if (named) out.push(...named);
    }
    return out;
  }
}
