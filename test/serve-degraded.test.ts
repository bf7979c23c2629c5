// /health of `isoatlas serve` when files fail verification: 503 "degraded" naming how many and the
// first, while the rest is served; ok again once the file verifies (put back by hand, or fetched
// again by the next mirror sync). Black box, on copies of the demo tree.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from './helpers/server.js';
import { treePaths } from '../edge/contract/tree.js';
import { objectKey } from '../edge/contract/store-layout.js';
import { readManifest } from './helpers/tree.js';
import { linkObjects } from './helpers/mirror-seed.js';
import { run } from './helpers/run.js';
import { mirror } from '../edge/mirror/mirror.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';

const GENE = 'ENSG00000186654'; // PRR5
let dir: string;
const servers: RunningServer[] = [];
const after: (() => void)[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-degraded-'));
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  for (const close of after) close();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(root: string): Promise<RunningServer> {
  const server = await startServer({ dir: root, extraArgs: ['--keys-dir', join(dir, 'keys')] });
  servers.push(server);
  return server;
}

const health = async (server: RunningServer) => {
  const r = await fetch(`${server.base}/health`);
  return {
    status: r.status,
    retryAfter: r.headers.get('retry-after'),
    body: (await r.json()) as Record<string, unknown>,
  };
};

/** The same length, one byte changed: only its sha256 tells. The file is replaced, not written into:
 * it may be a hard link to the shared fixture release. */
function flipByte(file: string): Buffer {
  const original = readFileSync(file);
  const body = Buffer.from(original);
  body[body.length - 2] ^= 1;
  rmSync(file);
  writeFileSync(file, body);
  return original;
}

describe('GET /health with files that fail verification', () => {
  it('a tree: degraded (503) with the count and the first path, the rest served; ok once the file is put back', async () => {
    const tree = join(dir, 'tree');
    // A hard-linked copy: the one file changed is replaced (flipByte), never written into.
    const copied = await run('cp', ['-al', inject('fixtureTree'), tree]);
    expect(copied.status, copied.stderr).toBe(0);
    const server = await serve(tree);
    const ok = await health(server);
    expect(ok.status).toBe(200);

    const original = flipByte(join(tree, treePaths.gene(GENE)));
    expect((await fetch(`${server.api}/genes/PRR5`)).status).toBe(502);
    expect((await fetch(`${server.api}/genes/PRR5`)).status).toBe(502); // the same file: counted once
    const bad = await health(server);
    expect(bad.status).toBe(503);
    expect(bad.retryAfter).toBe('5');
    expect(bad.body).toEqual({
      status: 'degraded',
      detail: `1 file failed verification (corrupt, or listed and missing) and is answered 502, the first ${treePaths.gene(GENE)}; build the tree again (\`isoatlas build --force\`), or put the files back as built`,
      release: ok.body.release,
      manifest_sha256: ok.body.manifest_sha256,
      mirror: null,
      failures: { count: 1, first: treePaths.gene(GENE) },
    });
    expect(JSON.stringify(bad.body)).not.toContain(dir);
    // Other files are served all the same.
    expect((await fetch(`${server.api}/release`)).status).toBe(200);
    // Log lines are written in batches, a little after the answers: waited for, not read at once.
    await server.untilLogged(
      (logs) => logs.includes(`"event":"unhealthy","detail":"1 file failed verification`),
      'the unhealthy line',
    );

    writeFileSync(join(tree, treePaths.gene(GENE)), original);
    expect(await health(server)).toMatchObject({ status: 200, body: ok.body });
    expect((await fetch(`${server.api}/genes/PRR5`)).status).toBe(200);
  }, 120_000);

  it('a mirror: a corrupt object degrades it until the next sync fetches it again', async () => {
    // The tree on a static file server: a source mirror syncs from.
    const files = createServer((req, res) => {
      const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname).replace(/^\/+/, '');
      readFile(join(dir, 'tree', path)).then(
        (body) => res.end(body),
        () => ((res.statusCode = 404), res.end()),
      );
    });
    await new Promise<void>((ok) => files.listen(0, '127.0.0.1', ok));
    after.push(() => files.close());
    const source = { base: `http://127.0.0.1:${(files.address() as AddressInfo).port}` };
    const store = join(dir, 'mirror');
    // The tree's files in place as objects (hashed by the sync, not downloaded), but the one this
    // test corrupts: downloaded, a file of the mirror's own.
    const { index, entries } = readManifest(join(dir, 'tree'));
    const sha = entries.find((e) => e.path === treePaths.gene(GENE))!.sha256;
    linkObjects(store, [join(dir, 'tree')], [...index.shards, ...entries], new Set([sha]));
    await mirror({ from: source.base, to: store, progress: false });
    const server = await serve(store);
    expect((await health(server)).status).toBe(200);

    flipByte(join(store, objectKey(sha)));
    expect((await fetch(`${server.api}/genes/PRR5`)).status).toBe(502);
    const bad = await health(server);
    expect(bad.status).toBe(503);
    expect(bad.body).toMatchObject({
      status: 'degraded',
      failures: { count: 1, first: treePaths.gene(GENE) },
      mirror: { source: source.base },
    });
    expect(bad.body.detail).toContain('sync the mirror again (`isoatlas mirror`): it fetches them again');
    // Still degraded at the next probe: nothing changed.
    expect((await health(server)).status).toBe(503);

    const synced = await mirror({ from: source.base, to: store, progress: false });
    expect(synced.fetched).toBe(1);
    const fixed = await health(server);
    expect(fixed.status).toBe(200);
    expect(fixed.body.status).toBe('ok');
    expect((await fetch(`${server.api}/genes/PRR5`)).status).toBe(200);
  }, 120_000);
});
