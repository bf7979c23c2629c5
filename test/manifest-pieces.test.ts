// A large manifest shard is parsed in pieces cut between its entries (edge/contract/manifest.ts,
// parseShardJson): the same objects as parsing it whole, full or delta, whatever its strings hold;
// a cut that lands outside `entries` is refused, and the shard is then parsed whole.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { parseShardInPieces, parseShardObject } from '../edge/contract/manifest.js';
import type { ManifestEntry } from '../edge/contract/tree.js';

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** `n` entries in path order, some with a content type holding what a cut looks for, escaped. */
function entries(n: number, prefix = 'api/v1/genes/G'): ManifestEntry[] {
  return Array.from({ length: n }, (_, i) => {
    const path = `${prefix}${String(i).padStart(6, '0')}.json`;
    const content_type = i % 97 === 0 ? `text/plain; x="},{"path":"é${i}"` : 'application/json; charset=utf-8';
    return { path, size: i * 7, sha256: sha(path), content_type };
  });
}

describe('a shard parsed in pieces', () => {
  it('is the shard parsed whole: full and delta, small and large, strings that look like a cut', () => {
    const shards = [
      { entries: entries(3_000) },
      { entries: entries(10) },
      { entries: entries(2_500), removed: ['api/v1/genes/X000001.json'], bases: [{ sha256: sha('b'), size: 9 }] },
      { entries: entries(700) }, // just over one piece
    ];
    for (const shard of shards) {
      const bytes = encode(shard);
      expect(parseShardInPieces(bytes)).toEqual(JSON.parse(JSON.stringify(shard)));
      const parsed = parseShardObject(bytes, 0, 1, 'shard');
      expect(parsed.entries).toEqual(shard.entries);
      expect(parsed.removed).toEqual(shard.removed ?? []);
    }
    expect(encode(shards[0]).length).toBeGreaterThan(4 * 96 * 1024);
  });

  it('refuses a cut outside entries, and the shard is then parsed whole', () => {
    // A member after `entries` holding objects with a path: its first cut falls there.
    const shard = { entries: entries(5), extra: entries(3_000, 'x/') };
    const bytes = encode(shard);
    expect(() => parseShardInPieces(bytes)).toThrow();
    expect(parseShardObject(bytes, 0, 1, 'shard').entries).toEqual(shard.entries);
  });

  it('a large shard that is not JSON is reported as the whole shard was', () => {
    const text = JSON.stringify({ entries: entries(3_000) });
    const at = text.indexOf('},{"path"', 300_000);
    const broken = new TextEncoder().encode(`${text.slice(0, at)}},,${text.slice(at + 2)}`);
    expect(() => parseShardObject(broken, 0, 1, 'manifest/000.json')).toThrow(/^manifest\/000\.json: not JSON/);
  });
});
