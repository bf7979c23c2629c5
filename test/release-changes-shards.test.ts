// What comparing two releases reads (edge/release-changes.ts): only the manifest shards the two
// manifests list differently, and at most one more for a record whose own file did not change; and
// what it lists: a record whose bytes did not change never, however its shard is encoded.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { changesBetween } from '../edge/release-changes.js';
import { VerifiedOrigin } from '../edge/origins/verified.js';
import type { OriginObject, ReleaseFiles } from '../edge/origin.js';
import { shardOf } from '../edge/contract/shards.js';
import { MANIFEST_FORMAT, treePaths, type ManifestEntry, type ManifestIndex } from '../edge/contract/tree.js';

const sha = (body: Uint8Array) => createHash('sha256').update(body).digest('hex');
const bytes = (text: string) => new TextEncoder().encode(text);

/** A tree in memory, its manifest in `shards` shards (each a full shard object, or as `encode`
 * writes it), counting the manifest shards read. */
class MemoryTree implements ReleaseFiles {
  readonly description = 'memory:';
  readonly shardsRead: string[] = [];
  private readonly files = new Map<string, Uint8Array>();
  constructor(files: Record<string, string>, shards: number, encode = (body: object) => JSON.stringify(body)) {
    const entries: ManifestEntry[][] = Array.from({ length: shards }, () => []);
    for (const [path, text] of Object.entries(files).sort(([a], [b]) => (a < b ? -1 : 1))) {
      const body = bytes(text);
      this.files.set(path, body);
      entries[shardOf(path, shards)].push({ path, size: body.length, sha256: sha(body), content_type: 'x' });
    }
    const listed = entries.map((list, n) => {
      const body = bytes(encode({ entries: list }));
      const path = treePaths.manifestShard(n);
      this.files.set(path, body);
      return { path, size: body.length, sha256: sha(body), content_type: 'application/json' };
    });
    const index: ManifestIndex = {
      release: 'r',
      api_version: 'v1',
      format: MANIFEST_FORMAT,
      files: Object.keys(files).length,
      bytes: 0,
      shards: listed,
    };
    this.files.set(treePaths.manifest, bytes(JSON.stringify(index)));
  }
  async read(path: string): Promise<OriginObject | null> {
    if (path.startsWith('manifest/')) this.shardsRead.push(path);
    const body = this.files.get(path);
    return body ? { body } : null;
  }
}

/** 200 isoforms with their domains, and 20 genes. */
function release(change: (files: Record<string, string>) => void = () => {}): Record<string, string> {
  const files: Record<string, string> = { [treePaths.release]: '{"release":"r"}' };
  for (let i = 0; i < 200; i++) {
    files[treePaths.isoform(`PB.1.${i}`)] = `{"transcript_id":"PB.1.${i}"}`;
    files[treePaths.domains(`PB.1.${i}`)] = `{"items":[${i}]}`;
  }
  for (let g = 0; g < 20; g++) files[treePaths.gene(`G${g}`)] = `{"gene_id":"G${g}"}`;
  change(files);
  return files;
}

const SHARDS = 16;

describe('comparing two releases', () => {
  it('reads only the shards listed differently, and the one of a record whose own file is the same', async () => {
    const id = 'PB.1.7';
    const before = new MemoryTree(release(), SHARDS);
    const after = new MemoryTree(
      release((f) => (f[treePaths.domains(id)] = '{"items":["new"]}')),
      SHARDS,
    );
    const changes = await changesBetween(new VerifiedOrigin(before), new VerifiedOrigin(after));
    expect(changes).toEqual([{ type: 'isoform', id, change: 'changed', parts: ['domains'] }]);
    const differing = treePaths.manifestShard(shardOf(treePaths.domains(id), SHARDS));
    const record = treePaths.manifestShard(shardOf(treePaths.isoform(id), SHARDS));
    expect(before.shardsRead).toEqual([differing]);
    expect(new Set(after.shardsRead)).toEqual(new Set([differing, record]));
  });

  it('lists records added, removed and changed, each once, genes first, whatever the shard counts', async () => {
    const edited = release((f) => {
      delete f[treePaths.isoform('PB.1.3')];
      delete f[treePaths.domains('PB.1.3')];
      f[treePaths.isoform('PB.1.300')] = '{}';
      f[treePaths.gene('G4')] = '{"gene_id":"G4","name":"new"}';
      f[treePaths.isoform('PB.1.9')] = '{"changed":true}';
      f[treePaths.domains('PB.1.9')] = '{"items":["changed"]}';
      f[treePaths.release] = '{"release":"s"}';
    });
    const expected = [
      { type: 'gene', id: 'G4', change: 'changed', parts: ['record'] },
      { type: 'isoform', id: 'PB.1.3', change: 'removed', parts: ['record', 'domains'] },
      { type: 'isoform', id: 'PB.1.300', change: 'added', parts: ['record'] },
      { type: 'isoform', id: 'PB.1.9', change: 'changed', parts: ['record', 'domains'] },
    ];
    for (const counts of [
      [SHARDS, SHARDS],
      [SHARDS, 4],
      [2, SHARDS],
    ]) {
      const before = new VerifiedOrigin(new MemoryTree(release(), counts[0]));
      const after = new VerifiedOrigin(new MemoryTree(edited, counts[1]));
      expect(await changesBetween(before, after), String(counts)).toEqual(expected);
    }
  });

  it('lists nothing when only the encoding of the shards differs, not a file', async () => {
    const before = new MemoryTree(release(), SHARDS);
    // The same entries in other bytes (as a publish's delta lists what its base has): every shard's
    // sha256 differs, no file's does.
    const after = new MemoryTree(release(), SHARDS, (body) => JSON.stringify(body, null, 1));
    expect(await changesBetween(new VerifiedOrigin(before), new VerifiedOrigin(after))).toEqual([]);
    expect(before.shardsRead.length).toBe(SHARDS);
  });
});
