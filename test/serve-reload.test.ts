// A served directory replaced by another tree (what `isoatlas mirror` does with its staging swap) is
// picked up without a restart: the local server pins releases by the manifest's identity.
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { treePaths } from '../edge/contract/tree.js';
import { run } from './helpers/run.js';
import { eventually } from './helpers/wait.js';
import { startServer } from './helpers/server.js';
import { rewriteTree, withAlias } from './helpers/tree.js';

let dir: string;
let server: Awaited<ReturnType<typeof startServer>>;

/** A hard-linked copy of the demo tree (cheap), in which files are replaced, never written through. */
async function linkedCopy(to: string) {
  const r = await run('cp', ['-al', inject('fixtureTree'), to]);
  expect(r.status, String(r.stderr)).toBe(0);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-reload-'));
  await linkedCopy(join(dir, 'live'));
  server = await startServer({ dir: join(dir, 'live') });
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('serves the new tree within seconds of the directory being swapped', async () => {
  const path = treePaths.gene('ENSG00000186654');
  const before = await (await fetch(`${server.api}/genes/PRR5`)).text();
  expect(before).toBe(readFileSync(join(inject('fixtureTree'), path), 'utf8'));

  const next = join(dir, 'next');
  await linkedCopy(next);
  const changed = JSON.stringify({ ...JSON.parse(before), biotype: 'swapped in' });
  // What the server caches (the alias maps) changes too: a name only the new tree knows. The new
  // tree's manifest is rewritten to match, as every build or sync writes one.
  await rewriteTree(next, {
    [path]: changed,
    ...Object.fromEntries([withAlias(next, 'isoforms', 'prr5-renamed', 'ENST00000006251.11')]),
  });
  expect((await fetch(`${server.api}/isoforms/PRR5-renamed`)).status).toBe(404);
  renameSync(join(dir, 'live'), join(dir, 'old'));
  renameSync(next, join(dir, 'live'));

  // The server looks at the tree on its own schedule: ask until it answers from the new one.
  const started = Date.now();
  const body = await eventually(
    async () => (await fetch(`${server.api}/genes/PRR5`)).text(),
    (text) => text === changed,
    'the new gene record',
    200,
  ).catch(() => before);
  expect(body).toBe(changed);
  const renamed = await eventually(
    async () => (await fetch(`${server.api}/isoforms/PRR5-renamed`)).status,
    (status) => status === 200,
    'the new name',
    200,
  ).catch(() => 404);
  expect(renamed).toBe(200);
  expect(Date.now() - started).toBeLessThan(5_000);
});
