// The set of files /health reports as failing verification (edge/server/verification-failures.ts): each
// is checked again in turn, a few per probe, and all are forgotten when what is served is written
// anew (a sync, a rebuild).
import { describe, expect, it } from 'vitest';
import { VerificationFailures } from '../edge/server/verification-failures.js';

/** A failure whose file verifies again once `fixed` holds its path. */
const failure = (path: string, fixed: Set<string>, rechecked: string[] = []) => ({
  path,
  recheck: async () => (rechecked.push(path), fixed.has(path)),
});

describe('VerificationFailures', () => {
  it('counts each path once, names the oldest still failing, and drops a file once it verifies', async () => {
    const fixed = new Set<string>();
    const f = new VerificationFailures();
    for (const p of ['a', 'b', 'a', 'c']) f.record(failure(p, fixed));
    expect(await f.check('sync 1')).toEqual({ count: 3, first: 'a' });
    fixed.add('a');
    expect(await f.check('sync 1')).toEqual({ count: 2, first: 'b' });
    fixed.add('b').add('c');
    expect(await f.check('sync 1')).toBeNull();
  });

  it('checks a few per probe, moving on, so every file is checked again in turn', async () => {
    const rechecked: string[] = [];
    const f = new VerificationFailures();
    const paths = Array.from({ length: 20 }, (_, i) => `f${i}`);
    for (const p of paths) f.record(failure(p, new Set(), rechecked));
    for (let i = 0; i < 3; i++) expect(await f.check('same')).toEqual({ count: 20, first: 'f0' });
    expect(new Set(rechecked)).toEqual(new Set(paths));
    expect(rechecked.length).toBeLessThan(3 * 20);
  });

  it('forgets what failed when what is served was written anew', async () => {
    const f = new VerificationFailures();
    await f.check('tree 1');
    f.record(failure('x', new Set()));
    expect(await f.check('tree 1')).toEqual({ count: 1, first: 'x' });
    expect(await f.check('tree 2')).toBeNull();
  });
});
