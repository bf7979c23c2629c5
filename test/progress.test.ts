// Progress without a terminal: periodic lines with counts, rate and time left; none after stop.
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { startProgress, timeLeft } from '../build/common/progress.js';
import { readLines } from '../build/import/input.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function sink() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { stream, lines };
}

const until = async (test: () => boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!test() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
};

describe('progress off a terminal', () => {
  it('logs a line with counts, rate and time left at each interval, and stops', async () => {
    const { stream, lines: drawn } = sink();
    const lines: string[] = [];
    const fields: Record<string, unknown>[] = [];
    const p = startProgress('publishing', 1000, stream, {
      lineEveryMs: 50,
      log: (f, msg) => void (fields.push(f), lines.push(msg!)),
    });
    p.tick(250);
    await until(() => lines.length >= 1);
    expect(lines[0]).toMatch(/^publishing: 250\/1,000 \(25\.0%\), [\d,]+\/s, about \d+ s left$/);
    expect(fields[0]).toMatchObject({ event: 'progress', step: 'publishing', done: 250, total: 1000 });
    // Off a terminal nothing is drawn on the bar's stream.
    expect(drawn).toEqual([]);
    p.stop();
    const n = lines.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(lines.length).toBe(n);
  });

  it('on a terminal, shows a note after the bar until it is cleared', () => {
    const drawn: string[] = [];
    const stream = Object.assign(
      new Writable({
        write(chunk, _enc, done) {
          drawn.push(String(chunk));
          done();
        },
      }),
      { isTTY: true, columns: 200, cursorTo: () => true, clearLine: () => true, moveCursor: () => true },
    );
    // The bar redraws at most a few times a second, and always as it stops.
    const p = startProgress('mirroring', 10, stream);
    p.note!('waiting 37 s: the source limits this address (429, Retry-After 37)');
    p.tick(1);
    p.stop();
    expect(drawn.join('')).toContain('1/10 | ');
    expect(drawn.join('')).toContain('| waiting 37 s: the source limits this address (429, Retry-After 37)');
    drawn.length = 0;
    const q = startProgress('mirroring', 10, stream);
    q.note!('waiting 37 s: the source limits this address (429, Retry-After 37)');
    q.note!(null);
    q.tick(2);
    q.stop();
    expect(drawn.join('')).toContain('2/10');
    expect(drawn.join('')).not.toContain('waiting');
  });

  it('estimates the time left from the rate so far', () => {
    expect(timeLeft(0, 100, 1000)).toBeNull();
    expect(timeLeft(50, 100, 10_000)).toBe('about 10 s left');
    expect(timeLeft(10, 100, 60_000)).toBe('about 9 min left');
    expect(timeLeft(1, 1000, 60_000)).toBe('about 16.6 h left');
  });
});

describe('reading a large input file', () => {
  it('reports its progress in MiB read, up to the whole file, and stops', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-progress-'));
    try {
      const file = join(dir, 'big.tsv');
      const line = `${'x'.repeat(99)}\n`;
      const count = 180_000; // 18,000,000 bytes: a little over 17 MiB
      writeFileSync(file, line.repeat(count));
      const seen: { label: string; total: number; ticks: number; stopped: boolean }[] = [];
      const fake = (label: string, total: number) => {
        const p = { label, total, ticks: 0, stopped: false };
        seen.push(p);
        return { tick: (n = 1) => void (p.ticks += n), stop: () => void (p.stopped = true) };
      };
      let lines = 0;
      for await (const _ of readLines(file, fake)) lines++;
      expect(lines).toBe(count);
      expect(seen).toEqual([{ label: 'reading big.tsv (MiB)', total: 18, ticks: 18, stopped: true }]);
      // A small file reads without progress.
      writeFileSync(join(dir, 'small.tsv'), line);
      for await (const _ of readLines(join(dir, 'small.tsv'), fake)) lines++;
      expect(seen).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
