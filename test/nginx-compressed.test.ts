// The nginx front's compressed copies (edge/server/nginx-compressed.ts), brought up to date group by
// group from files handed over one at a time: copies written for the files that lack them, kept for
// those that have them, removed for files no longer served, in a directory only this command writes.
import { afterAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { COPIES_MARK, CopiesWriter } from '../edge/server/nginx-compressed.js';
import type { ManifestEntry } from '../edge/contract/tree.js';

const work = mkdtempSync(join(tmpdir(), 'isoatlas-copies-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A file of `size` bytes of JSON, as the manifest lists it, and its bytes. */
function file(n: number, size: number): { entry: ManifestEntry; body: Buffer } {
  const body = Buffer.from(JSON.stringify({ n, pad: 'x'.repeat(Math.max(0, size - 20)) }).slice(0, size));
  const sha256 = createHash('sha256').update(body).digest('hex');
  return {
    entry: { path: `api/v1/genes/G${n}.json`, sha256, size: body.length, content_type: 'application/json' },
    body,
  };
}

const copiesIn = (dir: string) =>
  readdirSync(dir)
    .filter((d) => /^[0-9a-f]{2}$/.test(d))
    .flatMap((d) => readdirSync(join(dir, d)))
    .sort();

async function update(dir: string, files: { entry: ManifestEntry; body: Buffer }[]) {
  const bodies = new Map(files.map((f) => [f.entry.sha256, f.body]));
  let reads = 0;
  const writer = new CopiesWriter(dir, async (entry) => (reads++, bodies.get(entry.sha256) ?? null));
  for (const f of files) writer.want(f.entry);
  return { ...(await writer.finish()), reads };
}

describe('compressed copies', () => {
  it('writes each coding of the files large enough, keeps them on the next run, removes those of files gone', async () => {
    const dir = join(work, 'copies');
    const files = Array.from({ length: 40 }, (_, i) => file(i, i % 4 === 0 ? 100 : 2_000));
    const large = files.filter((f) => f.entry.size >= 256);
    const first = await update(dir, files);
    expect(first).toMatchObject({ written: 2 * large.length, kept: 0, removed: 0, reads: large.length });
    expect(copiesIn(dir)).toEqual(large.flatMap((f) => [`${f.entry.sha256}.br`, `${f.entry.sha256}.gz`]).sort());
    const one = large[0];
    const at = join(dir, one.entry.sha256.slice(0, 2), one.entry.sha256);
    expect(gunzipSync(readFileSync(`${at}.gz`)).equals(one.body)).toBe(true);
    expect(brotliDecompressSync(readFileSync(`${at}.br`)).equals(one.body)).toBe(true);
    // Nothing of the run's own notes is left behind.
    expect(readdirSync(dir).filter((n) => n.startsWith('.wanted'))).toEqual([]);

    const again = await update(dir, files);
    expect(again).toMatchObject({ written: 0, kept: 2 * large.length, removed: 0, reads: 0 });

    const fewer = files.slice(0, 20);
    const kept = fewer.filter((f) => f.entry.size >= 256);
    const pruned = await update(dir, fewer);
    expect(pruned).toMatchObject({ written: 0, kept: 2 * kept.length, removed: 2 * (large.length - kept.length) });
    expect(copiesIn(dir)).toEqual(kept.flatMap((f) => [`${f.entry.sha256}.br`, `${f.entry.sha256}.gz`]).sort());
  });

  it('refuses a file that does not hash to its sha256, and a directory it did not make', async () => {
    const dir = join(work, 'damaged');
    const f = file(1, 1_000);
    const writer = new CopiesWriter(dir, async () => Buffer.from('not the file'));
    writer.want(f.entry);
    await expect(writer.finish()).rejects.toThrow(/does not match its manifest sha256/);
    expect(copiesIn(dir)).toEqual([]);
    const foreign = join(work, 'foreign');
    mkdirSync(foreign);
    writeFileSync(join(foreign, 'object'), 'held by someone else');
    expect(() => new CopiesWriter(foreign, async () => null)).toThrow(/did not write/);
    expect(existsSync(join(foreign, COPIES_MARK))).toBe(false);
  });
});
