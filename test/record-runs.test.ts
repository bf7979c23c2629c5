// The tables of records on disk that keep a sync's scratch and gc's ledger in bounded memory
// (build/common/record-runs.ts): each larger than its in-memory batch here, so runs are written and
// merged (generations of them included), and read back in the order their users need.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BLOCK_BYTES, LogTable, SortedTable, type RecordView } from '../build/common/record-runs.js';

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-record-runs-'));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A directory of its own for one table. */
let tables = 0;
const dirOf = () => {
  const dir = join(work, `t${tables++}`);
  mkdirSync(dir);
  return dir;
};

/** A record: a 4-byte key, then a number saying which record it is, padded to `bytes`. */
function record(key: number, serial: number, bytes = 64): Buffer {
  const r = Buffer.alloc(bytes);
  r.writeUInt32BE(key, 0);
  r.writeUInt32BE(serial, 4);
  return r;
}
const keyOf = (r: RecordView) => r.buf.readUInt32BE(r.at);
const serialOf = (r: RecordView) => r.buf.readUInt32BE(r.at + 4);
/** Where two lists of pairs first differ, or -1 (cheaper to report than a diff of 40,000 pairs). */
const firstDifference = (a: number[][], b: number[][]) =>
  a.length !== b.length ? Math.min(a.length, b.length) : a.findIndex((p, i) => p[0] !== b[i][0] || p[1] !== b[i][1]);

/** Read back as [key, serial] pairs (a record read is valid until the next one is). */
function pairs(records: Iterable<RecordView>): number[][] {
  const out: number[][] = [];
  for (const r of records) out.push([keyOf(r), serialOf(r)]);
  return out;
}
const key = (k: number) => record(k, 0).subarray(0, 4);

/** Records that fill a batch of BLOCK_BYTES this many times over. */
const batches = (n: number, bytes = 64) => Math.ceil((n * BLOCK_BYTES) / (bytes + 2));

describe('a sorted table larger than its batch', () => {
  it('reads back in key order, equal keys in the order added, across runs of several generations', () => {
    const dir = dirOf();
    // 40 batches: 40 runs, each 16 of them merged into one as they come.
    const n = batches(40);
    const table = new SortedTable(dir, 't', { keyBytes: 4, unique: false, batchBytes: BLOCK_BYTES });
    try {
      // The serial falls as records are added: ties kept in the order added are not in the order of
      // the bytes after the key.
      for (let i = 0; i < n; i++) table.add(record((i * 7919) % 1000, n - i));
      expect(table.size).toBe(n);
      const read = pairs(table.records());
      const expected = [...Array(n).keys()].map((i) => [(i * 7919) % 1000, n - i]);
      expected.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
      const at = firstDifference(read, expected);
      expect(at, `read ${JSON.stringify(read[at])} where ${JSON.stringify(expected[at])} was due`).toBe(-1);
      // Merged as it grew: far fewer runs than batches written.
      expect(readdirSync(dir).length).toBeLessThan(16);
    } finally {
      table.close();
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  it('unique: keeps the first record added of each key, however the runs fall, and finds it', () => {
    const dir = dirOf();
    const keys = batches(5);
    const table = new SortedTable(dir, 't', { keyBytes: 4, unique: true, batchBytes: BLOCK_BYTES });
    try {
      // Every key, then every third again (in another order, other runs): the first one stays.
      for (let i = 0; i < keys; i++) table.add(record(i * 2, 1));
      for (let i = keys - 1; i >= 0; i -= 3) table.add(record(i * 2, 2));
      expect(table.compact()).toBe(keys);
      const read = pairs(table.records());
      expect(read).toEqual([...Array(keys).keys()].map((i) => [i * 2, 1]));
      // Lookups in ascending order, in any order, and of keys it does not hold (odd, before, after).
      for (let i = 0; i < keys; i++) expect(serialOf(table.find(key(i * 2))!)).toBe(1);
      for (const i of [keys - 1, 0, 17, keys >> 1, 3])
        expect(table.find(key(i * 2)) && keyOf(table.find(key(i * 2))!)).toBe(i * 2);
      for (const k of [1, 2 * keys + 1, 2 * keys, 999_999]) expect(table.find(key(k))).toBeNull();
      // Added after lookups: found by the next one; the older record of a key still wins.
      table.add(record(1, 3));
      table.add(record(0, 3));
      expect(serialOf(table.find(key(1))!)).toBe(3);
      expect(serialOf(table.find(key(0))!)).toBe(1);
    } finally {
      table.close();
    }
  });

  it('refuses a record added while it is read in order (a merge would remove what is read)', () => {
    const table = new SortedTable(dirOf(), 't', { keyBytes: 4, unique: false });
    try {
      table.add(record(1, 1));
      expect(() => {
        for (const _ of table.records()) table.add(record(2, 2));
      }).toThrow(/while it was read in order/);
    } finally {
      table.close();
    }
  });
});

describe('a log table larger than its batch', () => {
  it('reads back in the order added, with the records added while it is read', () => {
    const dir = dirOf();
    const n = batches(3);
    const table = new LogTable(dir, 'l', BLOCK_BYTES);
    try {
      for (let i = 0; i < n; i++) table.add(record(n - i, i));
      const read: number[] = [];
      for (const r of table.records()) {
        const serial = serialOf(r);
        read.push(serial);
        // Every 500th record first added brings one more, read after the rest (as an object refused
        // from a pack is then read alone).
        if (serial < n && serial % 500 === 0) table.add(record(0, n + serial));
      }
      const added = [...Array(n).keys()].filter((i) => i % 500 === 0).map((i) => n + i);
      const expected = [...Array(n).keys(), ...added];
      expect(read).toEqual(expected);
      expect(table.size).toBe(expected.length);
    } finally {
      table.close();
    }
    expect(readdirSync(dir)).toEqual([]);
  });
});
