// The bounded cache behind file bodies, manifest shards, parsed edge data and made answers.
import { describe, expect, it } from 'vitest';
import { LoadingCache } from '../edge/loading-cache.js';

/** Loads `key` into the cache with the given weight; resolves to the value. */
const load = (cache: LoadingCache<string>, key: string, weight = 10) =>
  cache.get(key, async () => ({ value: `value of ${key}`, weight }));

const kept = (cache: LoadingCache<string>, keys: string[]) => keys.filter((k) => cache.peek(k) !== undefined);

describe('LoadingCache', () => {
  it('keeps at most its budget of weight, dropping the oldest unused entry first', async () => {
    const cache = new LoadingCache<string>(30);
    for (const key of ['a', 'b', 'c', 'd', 'e']) await load(cache, key);
    expect(cache.size).toEqual({ entries: 3, weight: 30 });
    expect(kept(cache, ['a', 'b', 'c', 'd', 'e'])).toEqual(['c', 'd', 'e']);
  });

  it('gives an entry used since it was loaded a second chance over older unused ones', async () => {
    const cache = new LoadingCache<string>(30);
    for (const key of ['a', 'b', 'c']) await load(cache, key);
    expect(cache.peek('a')).toBe('value of a');
    await load(cache, 'd'); // a is the oldest but was used: b goes
    expect(cache.peek('b')).toBeUndefined();
    await load(cache, 'e'); // a was passed over (unmarked) and c was never used: c goes
    expect(kept(cache, ['a', 'c', 'd', 'e'])).toEqual(['a', 'd', 'e']);
  });

  it('evicts used entries too once every entry has had its chance, staying within the budget', async () => {
    const cache = new LoadingCache<string>(30);
    for (const key of ['a', 'b', 'c']) await load(cache, key);
    for (const key of ['a', 'b', 'c']) cache.peek(key);
    await load(cache, 'big', 25);
    expect(cache.size.weight).toBeLessThanOrEqual(30);
    expect(cache.peek('big')).toBe('value of big');
    expect(cache.size.entries).toBe(1);
  });

  it('loads a key once for concurrent requests, and does not keep a failed load', async () => {
    const cache = new LoadingCache<string>(100);
    let loads = 0;
    const slow = () => cache.get('k', async () => ({ value: `load ${++loads}`, weight: 1 }));
    expect(await Promise.all([slow(), slow(), slow()])).toEqual(['load 1', 'load 1', 'load 1']);
    expect(loads).toBe(1);

    let attempts = 0;
    const failing = () =>
      cache.get('f', async () => {
        attempts++;
        throw new Error('origin down');
      });
    await expect(failing()).rejects.toThrow('origin down');
    await expect(failing()).rejects.toThrow('origin down');
    expect(attempts).toBe(2);
    expect(cache.peek('f')).toBeUndefined();
  });

  it('answers a value heavier than the whole budget without keeping it', async () => {
    const cache = new LoadingCache<string>(30);
    await load(cache, 'a');
    expect(await load(cache, 'huge', 31)).toBe('value of huge');
    expect(cache.peek('huge')).toBeUndefined();
    expect(cache.peek('a')).toBe('value of a');
  });
});
