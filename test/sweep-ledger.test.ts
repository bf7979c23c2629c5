// gc's on-disk ledger (build/publish/sweep-ledger.ts): what the protected releases reference, by
// namespace, and what is to be deleted, read back in bounded batches in the order it was recorded.
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { SweepLedger } from '../build/publish/sweep-ledger.js';

const sha = (n: number) => n.toString(16).padStart(64, '0');

describe('the sweep ledger', () => {
  it('keeps objects and packs apart, and counts a sha referenced twice once', () => {
    const ledger = new SweepLedger();
    try {
      ledger.reference('object', [sha(1), sha(2), sha(1)]);
      ledger.reference('pack', [sha(2)]);
      expect(ledger.isReferenced('object', sha(1))).toBe(true);
      expect(ledger.isReferenced('pack', sha(1))).toBe(false);
      expect(ledger.isReferenced('pack', sha(2))).toBe(true);
      expect(ledger.referencedCount('object')).toBe(2);
      expect(ledger.referencedCount('pack')).toBe(1);
      ledger.clear();
      expect(ledger.referencedCount('object')).toBe(0);
      expect(ledger.isReferenced('object', sha(1))).toBe(false);
    } finally {
      ledger.close();
    }
  });

  it('gives back what is doomed in batches of the size asked, in the order recorded, every one once', () => {
    const ledger = new SweepLedger();
    try {
      const doomed = Array.from({ length: 2_345 }, (_, i) => ({ sha: sha(5_000 - i), size: i, pack: i % 7 === 0 }));
      ledger.doom(doomed.slice(0, 1_000));
      ledger.doom(doomed.slice(1_000));
      expect(ledger.doomedCount()).toBe(2_345);
      const batches = [...ledger.doomedBatches(1_000)];
      expect(batches.map((b) => b.length)).toEqual([1_000, 1_000, 345]);
      expect(batches.flat()).toEqual(doomed);
    } finally {
      ledger.close();
    }
  });

  it('removes its scratch directory when closed', () => {
    const before = new Set(readdirSync(tmpdir()).filter((n) => n.startsWith('isoatlas-gc-')));
    const ledger = new SweepLedger();
    const made = readdirSync(tmpdir()).filter((n) => n.startsWith('isoatlas-gc-') && !before.has(n));
    expect(made).toHaveLength(1);
    ledger.close();
    expect(existsSync(`${tmpdir()}/${made[0]}`)).toBe(false);
  });
});
