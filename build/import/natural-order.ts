// Ids in natural order (PB.2.1 < PB.10.1, records.ts compareNatural), which SQLite cannot sort: an
// external merge sort. Runs of a bounded number of ids are sorted in memory and written to the
// staging file; the runs are then merged, each read back a page at a time.
import { compareNatural } from '../release-db/records.js';
import type { Staging } from './staging.js';

/** Ids sorted in memory at once, in batches of the staging file's: a fixed number. */
const RUN_BATCHES = 25;

/** Min-heap of run cursors by their current id. */
class Heap<T> {
  private readonly items: T[] = [];
  constructor(private readonly before: (a: T, b: T) => boolean) {}
  get size() {
    return this.items.length;
  }
  push(item: T): void {
    const a = this.items;
    a.push(item);
    for (let i = a.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!this.before(a[i]!, a[parent]!)) break;
      [a[i], a[parent]] = [a[parent]!, a[i]!];
      i = parent;
    }
  }
  pop(): T {
    const a = this.items;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.before(a[l]!, a[m]!)) m = l;
        if (r < a.length && this.before(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** The values of `column` of staging table `table` in natural order, in pages; values that compare
 * equal keep the order of `fileOrder` (a stable sort of the file's rows). */
export function* naturalOrder(staging: Staging, table: string, column: string, fileOrder: string): Generator<string[]> {
  const { db } = staging;
  db.exec(`DROP TABLE IF EXISTS natural_runs;
    CREATE TABLE natural_runs (run INTEGER NOT NULL, pos INTEGER NOT NULL, id TEXT NOT NULL, PRIMARY KEY (run, pos)) WITHOUT ROWID`);
  const insert = db.prepare('INSERT INTO natural_runs VALUES (?, ?, ?)');
  let runs = 0;
  let pending: string[] = [];
  const flush = () => {
    if (!pending.length) return;
    pending.sort(compareNatural);
    const run = runs++;
    const writer = staging.writer();
    pending.forEach((id, pos) => writer.run(insert, run, pos, id));
    writer.commit();
    pending = [];
  };
  for (const page of staging.pages<{ id: string; k: number }>(
    (after) =>
      `SELECT ${column} AS id, ${fileOrder} AS k FROM ${table} ${after ? `WHERE ${fileOrder} > @k` : ''} ORDER BY ${fileOrder} LIMIT @limit`,
    (row) => ({ k: row.k }),
  )) {
    for (const { id } of page) {
      pending.push(id);
      if (pending.length >= staging.batchRows * RUN_BATCHES) flush();
    }
  }
  flush();

  const read = db.prepare('SELECT id FROM natural_runs WHERE run = ? AND pos >= ? ORDER BY pos LIMIT ?').pluck();
  const page = Math.max(1, Math.floor(staging.batchRows / Math.max(1, runs)));
  interface Cursor {
    run: number;
    next: number;
    ids: string[];
    at: number;
  }
  const fill = (c: Cursor): boolean => {
    c.ids = read.all(c.run, c.next, page) as string[];
    c.next += c.ids.length;
    c.at = 0;
    return c.ids.length > 0;
  };
  const heap = new Heap<Cursor>((a, b) => {
    const order = compareNatural(a.ids[a.at]!, b.ids[b.at]!);
    return order < 0 || (order === 0 && a.run < b.run);
  });
  for (let run = 0; run < runs; run++) {
    const c: Cursor = { run, next: 0, ids: [], at: 0 };
    if (fill(c)) heap.push(c);
  }
  let out: string[] = [];
  while (heap.size) {
    const c = heap.pop();
    out.push(c.ids[c.at++]!);
    if (c.at < c.ids.length || fill(c)) heap.push(c);
    if (out.length >= staging.batchRows) {
      yield out;
      out = [];
    }
  }
  if (out.length) yield out;
  db.exec('DROP TABLE natural_runs');
}
