// forEachLimited: at most `limit` in flight; on the first failure nothing new starts, what is in
// flight finishes, and the first error is thrown.
import { expect, it } from 'vitest';
import { forEachLimited } from '../build/common/concurrency.js';

const tick = () => new Promise((ok) => setImmediate(ok));

it('keeps at most `limit` items in flight and does each once', async () => {
  let inFlight = 0;
  let most = 0;
  const done: number[] = [];
  await forEachLimited([...Array(50).keys()], 4, async (n) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await tick();
    done.push(n);
    inFlight--;
  });
  expect(most).toBe(4);
  expect(done.sort((a, b) => a - b)).toEqual([...Array(50).keys()]);
});

it('stops starting items after the first failure, waits for those in flight, throws the first error', async () => {
  const started: number[] = [];
  let finished = 0;
  const run = forEachLimited([...Array(100).keys()], 3, async (n) => {
    started.push(n);
    await tick();
    if (n === 4) throw new Error('item 4 failed');
    if (n === 5) throw new Error('item 5 failed too');
    await tick();
    finished++;
  });
  await expect(run).rejects.toThrow('item 4 failed');
  expect(started.length).toBeLessThan(10);
  // Every item started either failed or finished before the promise settled.
  expect(finished).toBe(started.filter((n) => n !== 4 && n !== 5).length);
});

it('refuses a limit that is not a positive integer', async () => {
  await expect(forEachLimited([1], 0, async () => {})).rejects.toThrow(/positive integer/);
});
