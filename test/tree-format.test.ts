// A tree rendered by an older version (its manifest or edge index of another format) is not served:
// `isoatlas serve` refuses it with a message saying to rebuild, and `npm start` rebuilds the demo.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { NotATreeError, serve, treeIsCurrent } from '../edge/server/serve.js';
import { EDGE_INDEX_FORMAT, treePaths } from '../edge/contract/tree.js';

const work = mkdtempSync(join(tmpdir(), 'isoatlas-format-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('tree formats', () => {
  it('serves only a tree whose manifest and edge index are of the current formats', async () => {
    // What `serve` reads before anything else: the manifest, the release and the edge index.
    const tree = join(work, 'tree');
    for (const path of [treePaths.manifest, treePaths.release, treePaths.edgeIndex]) {
      mkdirSync(dirname(join(tree, path)), { recursive: true });
      cpSync(join(inject('fixtureTree'), path), join(tree, path));
    }
    expect(treeIsCurrent(tree)).toBe(true);
    const edgeIndex = JSON.parse(readFileSync(join(tree, treePaths.edgeIndex), 'utf8'));
    expect(edgeIndex.format).toBe(EDGE_INDEX_FORMAT);
    // Format 2 trees had MiniSearch term shards, which this version cannot read.
    writeFileSync(join(tree, treePaths.edgeIndex), JSON.stringify({ ...edgeIndex, format: 2 }));
    expect(treeIsCurrent(tree)).toBe(false);
    // Refused before anything else is set up (the access options are never reached).
    const options = { dir: tree, port: 0, host: '127.0.0.1', access: undefined as never, keysDir: work };
    await expect(serve(options)).rejects.toThrow(NotATreeError);
    await expect(serve(options)).rejects.toThrow(/older format.*rebuild it/);
  });
});
