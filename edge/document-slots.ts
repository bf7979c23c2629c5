// Search documents gathered by number, each with a mask of the query words that found it: the exact
// tier's working memory. A common word of full names ("protein") finds thousands of genes; a slot
// each, looked up through one array indexed by document number, costs no map or object per match.
import type { TermDoc } from './contract/search.js';

/** Document numbers per page of the slot table: a page is made when a search first touches it, so a
 * new edge instance answering a query of a few documents does not zero a table of every document. */
const PAGE_BITS = 12;
const PAGE_MASK = (1 << PAGE_BITS) - 1;

export class DocumentSlots {
  /** Document number → its slot + 1 (0: none), by page. */
  private readonly pages: (Int32Array | undefined)[];
  /** The documents gathered, by slot. */
  readonly docs: TermDoc[] = [];
  /** By slot: bits of what found the document (the exact tier: the query's words its name holds). */
  readonly masks: number[] = [];

  constructor(readonly documents: number) {
    this.pages = new Array((documents >>> PAGE_BITS) + 1).fill(undefined);
  }

  /** The slot of `doc`, given one on first sight. */
  slotOf(doc: TermDoc): number {
    const n = doc[3];
    const page = (this.pages[n >>> PAGE_BITS] ??= new Int32Array(1 << PAGE_BITS));
    const s = page[n & PAGE_MASK];
    if (s !== 0) return s - 1;
    this.docs.push(doc);
    this.masks.push(0);
    page[n & PAGE_MASK] = this.docs.length;
    return this.docs.length - 1;
  }

  /** Empties the slots for the next search (only the slots used are touched). */
  clear(): void {
    for (const doc of this.docs) this.pages[doc[3] >>> PAGE_BITS]![doc[3] & PAGE_MASK] = 0;
    this.docs.length = 0;
    this.masks.length = 0;
  }
}

const shared = new WeakMap<object, DocumentSlots>();

/** The slots of a release's search index (`owner`: its directory), made once and reused: a search
 * must fill, read and clear them without awaiting in between, as another search may run then. */
export function slotsOf(owner: object, documents: number): DocumentSlots {
  let slots = shared.get(owner);
  if (!slots || slots.documents !== documents) shared.set(owner, (slots = new DocumentSlots(documents)));
  return slots;
}
