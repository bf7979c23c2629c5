// Sets of search documents by number (contract/search.ts TermDoc), for the prefix tier of a search.
/** A set of document numbers: one bit each, so marking thousands of matches allocates nothing more.
 * Sets are reused (take/give back): a fresh 40 KB bitset per search (at human scale) would be
 * garbage enough to bring a young-generation collection every hundred searches. */
export class DocumentSet {
  private static readonly free: DocumentSet[] = [];
  private readonly bits: Uint32Array;
  size = 0;

  private constructor(readonly documents: number) {
    this.bits = new Uint32Array((documents >>> 5) + 1);
  }

  static take(documents: number): DocumentSet {
    const i = DocumentSet.free.findIndex((s) => s.documents === documents);
    return i >= 0 ? DocumentSet.free.splice(i, 1)[0] : new DocumentSet(documents);
  }

  giveBack(): void {
    if (this.size > 0) this.bits.fill(0);
    this.size = 0;
    // Searches in flight at once each hold their own; keeping a few covers the usual concurrency.
    if (DocumentSet.free.length < 8) DocumentSet.free.push(this);
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
