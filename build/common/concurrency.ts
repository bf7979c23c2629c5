// Work on many items with a bound on how many are in flight (publish's uploads, mirror's downloads).
// On the first failure no further item is started, the ones in flight are waited for (so nothing is
// left running behind the caller's back), and the first error is thrown.
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  if (!Number.isInteger(limit) || limit < 1) throw new Error(`concurrency must be a positive integer; got ${limit}`);
  let next = 0;
  let failure: { err: unknown } | null = null;
  const runner = async () => {
    while (failure === null && next < items.length) {
      const item = items[next++];
      try {
        await work(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, runner));
  if (failure) throw (failure as { err: unknown }).err;
}
