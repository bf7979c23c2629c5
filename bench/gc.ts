// Allocation per request: bytes the V8 heap and ArrayBuffers grew by over a batch of requests during
// which no garbage collection ran (checked with a GC performance observer; a batch that saw a GC is
// retried smaller). Without a collection nothing is freed, so the growth is what the batch allocated.
import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
/** Full collection, available without starting node with --expose-gc. */
export const gc = runInNewContext('gc') as () => void;

const gcStarts: number[] = [];
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcStarts.push(e.startTime);
});
observer.observe({ entryTypes: ['gc'] });

const allocated = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

const settle = () => new Promise((r) => setTimeout(r, 20));

/** Bytes allocated per call of `work`, or null when every batch size down to 2 saw a collection. */
export async function allocationPerCall(work: () => Promise<void>, batch = 64): Promise<number | null> {
  for (let n = batch; n >= 2; n = Math.floor(n / 2)) {
    gc();
    await settle();
    const t0 = performance.now();
    const before = allocated();
    for (let i = 0; i < n; i++) await work();
    const after = allocated();
    const t1 = performance.now();
    await settle(); // GC entries are delivered asynchronously
    if (!gcStarts.some((t) => t >= t0 && t <= t1)) return (after - before) / n;
  }
  return null;
}

export function stopGcObserver(): void {
  observer.disconnect();
}
