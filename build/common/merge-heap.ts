// A k-way merge of sorted streams: a binary heap of their cursors keeps the merge at a few
// comparisons a record, however many streams. Shared by the mirror's verified index
// (edge/mirror/verified-index.ts) and the tables of record-runs.ts.

/** A position in a sorted stream: `next` moves to the next item (false at the end). */
export interface MergeCursor {
  next(): boolean;
}

export class MergeHeap<C extends MergeCursor> {
  private readonly heap: C[];

  /** `before(a, b)`: whether a's current item comes first. Every source is moved to its first item. */
  constructor(
    sources: C[],
    private readonly before: (a: C, b: C) => boolean,
  ) {
    this.heap = sources.filter((c) => c.next());
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.down(i);
  }

  /** The cursor whose current item comes first, or undefined once every source has ended. */
  get top(): C | undefined {
    return this.heap[0];
  }

  /** Moves the top cursor on (dropping it at its end) and restores the order. */
  advance(): void {
    const heap = this.heap;
    if (heap.length === 0) return;
    if (!heap[0].next()) {
      const last = heap.pop()!;
      if (heap.length === 0) return;
      heap[0] = last;
    }
    this.down(0);
  }

  private down(i: number): void {
    const heap = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && this.before(heap[l], heap[m])) m = l;
      if (r < heap.length && this.before(heap[r], heap[m])) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m], heap[i]];
      i = m;
    }
  }
}
