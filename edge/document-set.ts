// Sets of search documents by number (contract/search.ts TermDoc), for the prefix tier of a search.
/** A set of document numbers: one bit each, so marking thousands of matches allocates nothing more. */
export class DocumentSet {
  private readonly bits: Uint32Array;
  size = 0;

  constructor(readonly documents: number) {
    this.bits = new Uint32Array((documents >>> 5) + 1);
  }

  /** Adds `n`; false when it was there already. */
  add(n: number): boolean {
    const word = n >>> 5;
    const bit = 1 << (n & 31);
    if (this.bits[word] & bit) return false;
    this.bits[word] |= bit;
    this.size++;
    return true;
  }

  has(n: number): boolean {
    return (this.bits[n >>> 5] & (1 << (n & 31))) !== 0;
  }
}
