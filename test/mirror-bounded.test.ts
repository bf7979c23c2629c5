// The parts that keep `isoatlas mirror` in bounded memory (docs/ARCHITECTURE.md, "Mirror in bounded
// memory"): the verified index spilled in sorted runs and merged as streams, and the sync's scratch
// tables read back in pages, each object once, in the order each step needs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VERIFIED_INDEX, VerifiedIndex, type Stamp } from '../edge/mirror/verified-index.js';
import { PAGE, SyncScratch } from '../edge/mirror/sync-scratch.js';

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-mirror-bounded-'));
});
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Computed once per number: the tests ask for each of 150,000 several times. */
const shas: string[] = [];
const shaOf = (i: number) => (shas[i] ??= createHash('sha256').update(String(i)).digest('hex'));
const stamp = (i: number, version = 0): Stamp => ({ size: i, mtimeMs: 1000 + version, ctimeMs: 2000.5, ino: i * 7 });
const records = (dir: string) => (statSync(join(dir, VERIFIED_INDEX)).size - 48) / 64;
/** A pid no process has: one that ran and ended. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid;

/** The stamps the first index recorded, by sha256 (object 5 with its second stamp). */
const stampBySha = new Map<string, Stamp>();
for (let i = 0; i < 150_000; i++) stampBySha.set(shaOf(i), i === 5 ? stamp(5, 1) : stamp(i));

describe('the verified index, larger than a chunk', () => {
  it('spills sorted runs, merges them with the old file (the newest stamp of an object wins), and drops what is gone', () => {
    const dir = join(work, 'index');
    mkdirSync(dir);
    const n = 150_000;
    const first = VerifiedIndex.read(dir, () => {});
    for (let i = 0; i < n; i++) first.add(shaOf(i), stamp(i));
    // Added again after two spills: this stamp, not the first, is the object's.
    first.add(shaOf(5), stamp(5, 1));
    expect(readdirSync(dir).filter((f) => f.includes('.run')).length).toBeGreaterThanOrEqual(2);
    expect(first.trusts(shaOf(77), stamp(77))).toBe('again');
    expect(first.trusts(shaOf(5), stamp(5))).toBeNull();
    expect(first.write(dir, () => null)).toBe(n);
    // The runs are scratch: gone once merged.
    expect(readdirSync(dir)).toEqual([VERIFIED_INDEX]);
    expect(records(dir)).toBe(n);

    const second = VerifiedIndex.read(dir, () => {});
    for (const i of [0, 1, 77, 99_999, n - 1]) expect(second.trusts(shaOf(i), stamp(i))).toBe('first');
    expect(second.trusts(shaOf(1), stamp(1))).toBe('again');
    expect(second.trusts(shaOf(5), stamp(5))).toBeNull();
    expect(second.trusts(shaOf(5), stamp(5, 1))).toBe('first');
    expect(second.trusts(shaOf(n + 1), stamp(n + 1))).toBeNull();
    expect(second.verifiedNow(shaOf(77))).toBe(true);
    expect(second.verifiedNow(shaOf(78))).toBe(false);
    // Not looked at by this run: kept when its file still has the stamp (the even ones here).
    second.add(shaOf(n + 1), stamp(n + 1));
    const even = (sha: string) => Number.parseInt(sha.slice(-1), 16) % 2 === 0;
    const kept = second.write(dir, (sha) => (even(sha) ? stampBySha.get(sha)! : null));
    // Trusted by this run (0, 1, 5, 77, 99_999, n - 1): kept whatever their file says now.
    const oddTrusted = [0, 1, 5, 77, 99_999, n - 1].map(shaOf).filter((sha) => !even(sha)).length;
    const evenAll = [...stampBySha.keys()].filter(even).length;
    expect(kept).toBe(evenAll + oddTrusted + 1);
    expect(records(dir)).toBe(kept);
  });
});

describe("a sync's scratch tables", () => {
  it('give each wanted object once, in sha256 order, across pages, as first listed; missing packed objects by pack and offset', () => {
    const scratch = SyncScratch.open(join(work, 'scratch'));
    try {
      const n = PAGE + 500;
      for (let i = 0; i < n; i++) scratch.addWanted(shaOf(i), i, `p/${i}`);
      // Listed again by another shard or release: counted once, the first listing kept.
      for (let i = 0; i < n; i += 3) scratch.addWanted(shaOf(i), i, `again/${i}`);
      expect(scratch.wantedCount()).toBe(n);
      const seen = [...scratch.wanted()].flat();
      expect(seen.map((w) => w.sha256)).toEqual([...Array(n).keys()].map(shaOf).sort());
      expect(seen.every((w) => w.path === `p/${w.size}`)).toBe(true);

      const [a, b] = [scratch.packNumber('a'.repeat(64)), scratch.packNumber('b'.repeat(64))];
      expect(scratch.packNumber('a'.repeat(64))).toBe(a);
      scratch.addPacked(shaOf(1), b, 0, 1);
      scratch.addPacked(shaOf(1), a, 50, 1);
      expect(scratch.where(shaOf(1))).toEqual({ pack: b, offset: 0, length: 1 });
      for (let i = 0; i < n; i++)
        scratch.addMissing(
          { sha256: shaOf(i), size: 10, path: `p/${i}` },
          { pack: i % 2, offset: (n - i) * 10, length: 10 },
        );
      scratch.addMissing({ sha256: shaOf(n), size: 10, path: 'alone' }, null);
      expect(scratch.missingCounts()).toEqual({ packed: n, alone: 1 });
      const order = [...scratch.missingPacked()].flat().map((m) => [m.pack, m.offset]);
      expect(order).toEqual([...order].sort((x, y) => x[0] - y[0] || x[1] - y[1]));
      expect(order.length).toBe(n);
      expect([...scratch.alone()].flat().map((w) => w.path)).toEqual(['alone']);
    } finally {
      scratch.close();
    }
    expect(readdirSync(join(work, 'scratch'))).toEqual([]);
  });

  it('larger than their batches: the first listing of each object, places found as the sync asks, ties and late rows in order', () => {
    const root = join(work, 'scratch-runs');
    // Batches of 64 KiB: every table below is written in several runs, then merged.
    const scratch = SyncScratch.open(root, { batchBytes: 64 * 1024 });
    try {
      const n = 20_000;
      for (let i = 0; i < n; i++) scratch.addWanted(shaOf(i), i, `p/${i}`);
      for (let i = n - 1; i >= 0; i -= 7) scratch.addWanted(shaOf(i), i, `again/${i}`);
      const pack = scratch.packNumber('c'.repeat(64));
      // Every even object packed; every tenth given a second place later, which is not used.
      for (let i = 0; i < n; i += 2) scratch.addPacked(shaOf(i), pack, i * 100, i);
      for (let i = 0; i < n; i += 10) scratch.addPacked(shaOf(i), pack + 1, 0, 1);
      // A few lookups out of order (as the sync plans its shards' ranges), before all are added.
      expect(scratch.where(shaOf(n - 2))).toEqual({ pack, offset: (n - 2) * 100, length: n - 2 });
      expect(scratch.where(shaOf(1))).toBeNull();
      // Added after lookups (a pack index read late): found by the next one.
      scratch.addPacked(shaOf(1), pack, 1, 1);
      expect(scratch.where(shaOf(1))).toEqual({ pack, offset: 1, length: 1 });
      expect(scratch.wantedCount()).toBe(n);
      let last = '';
      let seen = 0;
      for (const page of scratch.wanted()) {
        expect(page.length).toBeLessThanOrEqual(PAGE);
        for (const o of page) {
          expect(o.sha256 > last).toBe(true);
          last = o.sha256;
          seen++;
          expect(o.path).toBe(`p/${o.size}`);
          // In sha256 order, as the sync checks what it holds.
          const at = scratch.where(o.sha256);
          const i = o.size;
          expect(at).toEqual(
            i % 2 === 0 ? { pack, offset: i * 100, length: i } : i === 1 ? { pack, offset: 1, length: 1 } : null,
          );
          // Missing: the odd ones alone; the even ones in a pack, the last object first.
          if (i % 2 === 1) scratch.addMissing(o, null);
          else scratch.addMissing(o, { pack, offset: (n - i) * 100, length: i });
        }
      }
      expect(seen).toBe(n);
      expect(scratch.missingCounts()).toEqual({ packed: n / 2, alone: n / 2 });
      const missing = [...scratch.missingPacked()].flat();
      const byOffset = [...Array(n / 2).keys()].map((k) => n - 2 - 2 * k);
      expect(missing.map((m) => m.size)).toEqual(byOffset);
      expect(missing.every((m) => m.sha256 === shaOf(m.size) && m.path === `p/${m.size}`)).toBe(true);
      // Read alone: in the order added, and those added meanwhile (refused from a pack) after them.
      const alone: string[] = [];
      for (const page of scratch.alone())
        for (const o of page) {
          alone.push(o.path);
          if (o.path === `p/${n - 1}`) scratch.addAlone({ sha256: shaOf(n), size: 1, path: 'refused' });
        }
      expect(alone.length).toBe(n / 2 + 1);
      expect(alone.at(-1)).toBe('refused');
    } finally {
      scratch.close();
    }
    expect(readdirSync(root)).toEqual([]);
  });

  it('are removed by the next sync when the one that made them is gone, not while it runs', () => {
    const root = join(work, 'leftovers');
    const dead = join(root, `.sync-scratch-${deadPid()}-0abc`);
    const live = join(root, `.sync-scratch-${process.pid}-0def`);
    mkdirSync(dead, { recursive: true });
    mkdirSync(live);
    SyncScratch.open(root).close();
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(live)).toBe(true);
  });
});
