// A loaded term shard of the search index (contract/search.ts TermShardBody): sorted terms, each with
// the documents it names. An exact term is one binary search; the terms starting with a prefix are
// one contiguous run, found with two.
import type { TermDoc, TermShardBody } from './contract/search.js';

export class TermShard {
  readonly docs: readonly TermDoc[];
  readonly terms: readonly string[];
  readonly postings: readonly (readonly number[])[];

  /** Throws when `body` is not shaped as a term shard. Only the shape: the bytes were checked against
   * the sha256 the edge index lists, and the edge index's format against this version's. */
  constructor(body: unknown) {
    const b = body as TermShardBody;
    if (
      !b ||
      !Array.isArray(b.docs) ||
      !Array.isArray(b.terms) ||
      !Array.isArray(b.postings) ||
      b.terms.length !== b.postings.length
    )
      throw new Error('not a term shard');
    this.docs = b.docs;
    this.terms = b.terms;
    this.postings = b.postings;
  }

  /** Index of the first term not below `term`. */
  private lowerBound(term: string): number {
    let lo = 0;
    let hi = this.terms.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.terms[mid] < term) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index of `term`, or -1. */
  find(term: string): number {
    const i = this.lowerBound(term);
    return this.terms[i] === term ? i : -1;
  }

  /** The run [from, to) of terms that start with `prefix`. */
  prefixRange(prefix: string): [number, number] {
    if (prefix === '') return [0, this.terms.length];
    // Every term starting with the prefix sorts below the prefix with its last code unit raised by one.
    const above = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
    return [this.lowerBound(prefix), this.lowerBound(above)];
  }
}
