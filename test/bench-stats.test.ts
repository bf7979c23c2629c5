// The benchmark's statistics (bench/stats.ts): every figure in BENCHMARKS.md is a median with its
// spread, so these must be right.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fmtSummary, median, quantile, relativeSpread, summarize } from '../bench/stats.js';
import { writeBenchmarks } from '../bench/report.js';

describe('bench statistics', () => {
  it('interpolates quantiles between closest ranks, whatever the input order', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(quantile([10, 20, 30, 40, 50], 0.99)).toBeCloseTo(49.6);
    expect(quantile([7], 0.99)).toBe(7);
    expect(() => quantile([], 0.5)).toThrow(/no values/);
    expect(() => quantile([1], 1.5)).toThrow(/outside/);
  });

  it('summarizes runs as median, min–max and IQR, and prints the spread only when there is one', () => {
    const s = summarize([120, 100, 110, 90, 130]);
    expect(s).toEqual({ n: 5, median: 110, min: 90, max: 130, iqr: 20 });
    expect(relativeSpread(s)).toBeCloseTo((100 * 40) / 110);
    expect(fmtSummary(s, 0, 'ms')).toBe('110 ms (90–130)');
    expect(fmtSummary(summarize([1234.5]), 1)).toBe('1,234.5');
  });
});

describe('BENCHMARKS.md writing', () => {
  const machine = { cpu: 'cpu', cores: 2, ramGiB: 1, os: 'os', node: 'v20', nginx: 'none' };
  const section = (id: 'cli', figure: string) => ({
    id,
    title: 'CLI',
    headline: '',
    method: figure,
    tables: [],
    targets: [],
    notes: [],
  });

  it('replaces a re-run section and keeps the others, the hand-measured install section included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-bench-report-'));
    try {
      const file = join(dir, 'BENCHMARKS.md');
      const byHand = '<!-- bench:install -->\n## Install\n\nmeasured by hand\n<!-- /bench:install -->';
      writeFileSync(file, `# Benchmarks\n\n<!-- bench:cli -->\nold figure\n<!-- /bench:cli -->\n\n${byHand}\n`);
      writeBenchmarks(file, machine, 'now', [section('cli', 'new figure')]);
      const text = readFileSync(file, 'utf8');
      expect(text).toContain('new figure');
      expect(text).not.toContain('old figure');
      expect(text).toContain(byHand);
      expect(text.indexOf('bench:cli')).toBeLessThan(text.indexOf('bench:install'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to write over text outside its sections, and leaves the file as it was', () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-bench-report-'));
    try {
      const file = join(dir, 'BENCHMARKS.md');
      const before =
        '# Benchmarks\n\n<!-- bench:cli -->\nold figure\n<!-- /bench:cli -->\n\n## Measured by hand\n\nfigures\n';
      writeFileSync(file, before);
      expect(() => writeBenchmarks(file, machine, 'now', [section('cli', 'new figure')])).toThrow(
        /text outside the sections the bench knows.*## Measured by hand/,
      );
      expect(readFileSync(file, 'utf8')).toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
