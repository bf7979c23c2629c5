// Progress without a terminal: periodic lines with counts, rate and time left; none after stop.
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { startProgress, timeLeft } from '../build/progress.js';

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
  it('writes a line with counts, rate and time left at each interval, and stops', async () => {
    const { stream, lines } = sink();
    const p = startProgress('publishing', 1000, stream, { lineEveryMs: 50 });
    p.tick(250);
    await until(() => lines.length >= 1);
    expect(lines[0]).toMatch(/^publishing: 250\/1,000 \(25\.0%\), [\d,]+\/s, about \d+ s left$/);
    p.stop();
    const n = lines.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(lines.length).toBe(n);
  });

  it('estimates the time left from the rate so far', () => {
    expect(timeLeft(0, 100, 1000)).toBeNull();
    expect(timeLeft(50, 100, 10_000)).toBe('about 10 s left');
    expect(timeLeft(10, 100, 60_000)).toBe('about 9 min left');
    expect(timeLeft(1, 1000, 60_000)).toBe('about 16.6 h left');
  });
});
