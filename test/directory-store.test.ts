// publish, rollback, releases and gc take any store (edge/store/): over a directory they run as over
// a bucket, and the edge serves what they wrote through the same store origin a mirror's server uses.
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { listReleases, publish, rollback } from '../build/publish/publish.js';
import { collectGarbage } from '../build/publish/collect.js';
import { treePaths } from '../edge/contract/tree.js';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'isoatlas-directory-store-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

it('publish, rollback, releases and gc run over a store in a directory; the store origin serves it', async () => {
  const store = new ReleaseStore(new DirectoryBackend(join(root, 'store')));
  const tree = inject('fixtureTree');
  const first = await publish({ dir: tree, store, progress: false });
  expect(first.uploaded).toBe(first.objects);
  expect((await store.pointer())?.release).toBe(first.release);
  expect((await listReleases({ store })).releases.map((r) => r.release)).toEqual([first.release]);

  const pinned = await new StoreOrigin(store.backend, 0).pin();
  expect(pinned?.release).toBe(first.release);
  expect((await pinned!.files.read(treePaths.manifest))?.body.length).toBeGreaterThan(0);

  // The store has every object: publishing the same tree again uploads nothing.
  expect((await publish({ dir: tree, store, progress: false })).uploaded).toBe(0);
  await expect(rollback({ store })).rejects.toThrow(
    new RegExp(`${first.release} is the earliest release kept in .*nothing before it to roll back to`),
  );

  // gc keeps what the release references and deletes an unreferenced object past the grace period.
  const stray = 'f'.repeat(64);
  await store.putObject(stray, Buffer.from('no release lists this'));
  const within = await collectGarbage({ store });
  expect(within).toMatchObject({ deleted: 0, young: 1 });
  const after = await collectGarbage({ store, now: () => new Date(Date.now() + 49 * 3_600_000) });
  expect(after).toMatchObject({ deleted: 1, referenced: first.objects });
  expect((await store.objects()).has(stray)).toBe(false);
  expect((await store.objects()).size).toBe(first.objects);
});
