// A store whose CDN pins the release viewers get in a KeyValueStore: publish, rollback, releases and
// gc read and move that pin (the recorded one without --kvs), refuse to run without reaching it, and
// gc keeps what the pin (now, or within the grace period) references. A fake KeyValueStore, and a
// real S3-protocol server of this file's own (helpers/publish-setup.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { listReleases, publish, rollback } from '../build/publish/publish.js';
import { collectGarbage } from '../build/publish/collect.js';
import { createHandler } from '../edge/handler.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { DEFAULT_RELEASE_PARAM, RELEASE_HEADER } from '../edge/contract/routes.js';
import { startFakeKvs, type FakeKvs } from './helpers/fake-kvs.js';
import { StorageError } from '../build/common/storage-errors.js';
import { freePort } from './helpers/ports.js';
import { kvsClient } from '../build/keys/commands.js';
import { CURRENT_RELEASE_ENTRY } from '../edge/cloudfront/kvs-layout.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { loadCloudFrontFunction, viewerRequest } from './helpers/cloudfront-function.js';
import { S3RawOrigin } from '../edge/origins/s3.js';
import { startS3rver } from './helpers/s3rver.js';
import { BUCKET, RELEASE1, RELEASE1_PATTERN, usePublishStore, server, s3 } from './helpers/publish-setup.js';
import { release1, release2, release3, release4a, release4b } from './helpers/publish-setup.js';
import { referencedOf, presentObjects, recording, cli } from './helpers/publish-setup.js';

usePublishStore(startS3rver);

describe('the CDN pin (KeyValueStore) cannot be stranded', () => {
  // A store of its own, below a prefix, with the KeyValueStore of its deployment and of another one.
  const PREFIX = 'pinned/';
  const ARN_A = 'arn:aws:cloudfront::123456789012:key-value-store/0a1b2c3d-pin-a';
  const ARN_B = 'arn:aws:cloudfront::123456789012:key-value-store/0a1b2c3d-pin-b';
  let kvsA: FakeKvs;
  let kvsB: FakeKvs;
  const store = { s3: undefined as unknown as S3Client, bucket: BUCKET, prefix: PREFIX };
  const clientA = async () => ({ client: await kvsClient(kvsA.url), endpoint: kvsA.url });
  const unreachable = async () => {
    const endpoint = `http://localhost:${await freePort()}`;
    return { client: await kvsClient(endpoint), endpoint };
  };
  const history = async () =>
    JSON.parse(
      await (
        await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}releases.json` }))
      ).Body!.transformToString(),
    );
  const edgeRecord = () =>
    s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}edge.json` })).then(
      async (o) => JSON.parse(await o.Body!.transformToString()),
      () => null,
    );
  const uploads = (commands: string[]) => commands.filter((c) => c === 'PutObjectCommand').length;
  const s3Args = () => ['--bucket', BUCKET, '--prefix', PREFIX, '--endpoint', server.endpoint];

  beforeAll(async () => {
    store.s3 = s3;
    kvsA = await startFakeKvs(ARN_A);
    kvsB = await startFakeKvs(ARN_B);
  });
  afterAll(async () => {
    await kvsA?.close();
    await kvsB?.close();
  });

  it('a store without a KeyValueStore publishes as before; the first --kvs records it, and later publishes without --kvs move its pin', async () => {
    await publish({ ...store, dir: release1, progress: false });
    expect(await edgeRecord()).toBeNull();
    expect((await listReleases(store)).pin).toBeNull();

    await publish({ ...store, dir: release2, progress: false, kvs: { ...(await clientA()), arn: ARN_A } });
    expect(await edgeRecord()).toMatchObject({ format: 2, kvs: ARN_A });
    expect(kvsA.entries.get(CURRENT_RELEASE_ENTRY)).toBe('2026.12-test');

    // No --kvs: the recorded store is used, and the history notes until when 2026.12-test was pinned.
    const before = Date.now();
    await publish({ ...store, dir: release3, progress: false, kvs: await clientA() });
    expect(kvsA.entries.get(CURRENT_RELEASE_ENTRY)).toBe('2027.01-test');
    const [unpinned] = (await history()).unpinned;
    expect(unpinned.release).toBe('2026.12-test');
    expect(Date.parse(unpinned.unpinned_at)).toBeGreaterThanOrEqual(before - 1000);
    expect((await listReleases({ ...store, kvs: await clientA() })).pin).toEqual({
      kvs: ARN_A,
      release: '2027.01-test',
    });

    // What CloudFront does with a request: the gate names the release, the origin function answers from it.
    const gate = loadCloudFrontFunction(keyGateCode(keyGateSettings(null)), kvsA.entries);
    const viewer = await gate.handler(viewerRequest({ uri: '/api/v1/release' }));
    expect(viewer.querystring).toEqual({ [DEFAULT_RELEASE_PARAM]: { value: '2027.01-test' } });
    const handler = createHandler({ origin: new StoreOrigin(new S3RawOrigin(s3, BUCKET, PREFIX), 60_000) });
    const answer = await handler(
      new Request(
        `http://atlas.test${viewer.uri}?${DEFAULT_RELEASE_PARAM}=${viewer.querystring[DEFAULT_RELEASE_PARAM].value}`,
      ),
    );
    expect(answer.headers.get(RELEASE_HEADER)).toBe('2027.01-test');
  });

  it('publish refuses to run without reaching the recorded KeyValueStore, before uploading anything', async () => {
    const commands: string[] = [];
    await expect(publish({ ...store, s3: recording(commands), dir: release4a, progress: false })).rejects.toThrow(
      new RegExp(
        `${PREFIX}edge.json records the CDN's KeyValueStore ${ARN_A}, which pins the release viewers get: publish needs to reach it`,
      ),
    );
    const down = await unreachable();
    const refused = publish({ ...store, s3: recording(commands), dir: release4a, progress: false, kvs: down });
    await expect(refused).rejects.toBeInstanceOf(StorageError);
    await expect(refused).rejects.toThrow(
      new RegExp(
        `DescribeKeyValueStore on the CDN's KeyValueStore ${ARN_A} at ${down.endpoint} failed: .*publish changed nothing\\. To fix: `,
      ),
    );
    expect(uploads(commands)).toBe(0);
    expect((await listReleases(store)).pending).toEqual([]);

    // The command line: storage exit code 4, naming the store, the endpoint and what to do.
    const r = await cli(['publish', '--dir', release4a, ...s3Args(), '--kvs-endpoint', down.endpoint]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`DescribeKeyValueStore on the CDN's KeyValueStore ${ARN_A} at ${down.endpoint} failed`);
    expect(r.stderr).toContain('To fix: cannot reach the endpoint (ECONNREFUSED)');
    // Another KeyValueStore than the recorded one: a usage error saying how to replace it on purpose.
    const other = await cli(['publish', '--dir', release4a, ...s3Args(), '--kvs', ARN_B, '--kvs-endpoint', kvsB.url]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(`--kvs ${ARN_B}, but s3://${BUCKET}/${PREFIX}edge.json records ${ARN_A}`);
    expect(other.stderr).toContain(`add --replace-kvs ${ARN_A}`);
    expect(kvsB.entries.size).toBe(0);
    expect((await listReleases(store)).releases.map((r) => r.release)).not.toContain('2027.02-a');
  });

  it('rollback moves the recorded pin without --kvs, and refuses another KeyValueStore', async () => {
    await expect(rollback({ ...store, kvs: { ...(await clientA()), arn: ARN_B } })).rejects.toThrow(/--replace-kvs/);
    await expect(rollback({ ...store, kvs: await unreachable() })).rejects.toThrow(/rollback changed nothing/);
    expect((await listReleases(store)).current).toBe('2027.01-test');
    expect(await rollback({ ...store, kvs: await clientA() })).toMatchObject({
      from: '2027.01-test',
      to: '2026.12-test',
      changed: true,
    });
    expect(kvsA.entries.get(CURRENT_RELEASE_ENTRY)).toBe('2026.12-test');
    expect((await history()).unpinned.map((u: { release: string }) => u.release)).toEqual(['2027.01-test']);
    // The pin alone behind the pointer (as a publish without the KeyValueStore once left it): rolling
    // back to the current release moves the pin.
    kvsA.entries.set(CURRENT_RELEASE_ENTRY, RELEASE1);
    expect(await rollback({ ...store, to: '2026.12-test', kvs: await clientA() })).toMatchObject({ changed: true });
    expect(kvsA.entries.get(CURRENT_RELEASE_ENTRY)).toBe('2026.12-test');
  });

  it('releases shows the pin, and says when it and the pointer disagree', async () => {
    kvsA.entries.set(CURRENT_RELEASE_ENTRY, RELEASE1);
    try {
      const r = await cli(['releases', ...s3Args(), '--kvs-endpoint', kvsA.url]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^\\s+${RELEASE1_PATTERN} .* pinned at the CDN$`, 'm'));
      expect(r.stdout).toContain(
        `pin: ${ARN_A} → ${RELEASE1}, but current.json names 2026.12-test: the CDN answers API requests from ${RELEASE1}`,
      );
      const down = await unreachable();
      expect((await listReleases({ ...store, kvs: down })).pin).toMatchObject({
        kvs: ARN_A,
        release: null,
        error: expect.stringContaining(`at ${down.endpoint} failed`),
      });
    } finally {
      kvsA.entries.set(CURRENT_RELEASE_ENTRY, '2026.12-test');
    }
    expect((await cli(['releases', ...s3Args(), '--kvs-endpoint', kvsA.url])).stdout).toContain(
      `pin: ${ARN_A} → 2026.12-test, as current.json`,
    );
  });

  it('gc keeps the release pinned now (read at gc time) and every release pinned within the grace period, and deletes nothing when it cannot read the pin', async () => {
    // Retire 2026.11 and 2026.12 (the latter while pinned: the pin moves away after it is retired).
    await publish({ ...store, dir: release4a, progress: false, keep: 2, kvs: await clientA() });
    const h = await history();
    expect(h.releases.map((r: { release: string }) => r.release)).toEqual(['2027.01-test', '2027.02-a']);
    const retiredAt = Date.parse(h.retired.find((r: { release: string }) => r.release === '2026.12-test').retired_at);
    const unpinnedAt = Date.parse(
      h.unpinned.find((u: { release: string }) => u.release === '2026.12-test').unpinned_at,
    );
    expect(unpinnedAt).toBeGreaterThan(retiredAt);

    const [objects1, objects2, objects3, objects4a] = await Promise.all(
      [release1, release2, release3, release4a].map((r) => referencedOf(r, PREFIX)),
    );
    const kept = new Set([...objects3, ...objects4a]);
    const onlyDemo = new Set([...objects1].filter((sha) => !kept.has(sha) && !objects2.has(sha)));
    const onlyRetired = new Set([...objects1, ...objects2].filter((sha) => !kept.has(sha)));
    expect(onlyRetired.size).toBeGreaterThan(onlyDemo.size);
    const at = (t: number) => () => new Date(t);

    // Past 2026.12's retirement grace but within its unpin grace: its objects stay.
    const withinPinGrace = await collectGarbage({
      ...store,
      dryRun: true,
      now: at(unpinnedAt + 48 * 3_600_000),
      kvs: await clientA(),
    });
    expect(withinPinGrace).toMatchObject({ pinned: '2027.02-a', deleted: onlyDemo.size });
    // A moment later they would go: the unpin record is what kept them.
    expect(
      (
        await collectGarbage({
          ...store,
          dryRun: true,
          now: at(unpinnedAt + 48 * 3_600_000 + 1000),
          kvs: await clientA(),
        })
      ).deleted,
    ).toBe(onlyRetired.size);

    // The pin on a retired release (as a publish before the store recorded its KeyValueStore left it):
    // read at gc time, its objects and its history entry stay, long after every grace period.
    kvsA.entries.set(CURRENT_RELEASE_ENTRY, '2026.12-test');
    const later = unpinnedAt + 30 * 24 * 3_600_000;
    const done = await collectGarbage({ ...store, now: at(later), kvs: await clientA() });
    expect(done).toMatchObject({ pinned: '2026.12-test', deleted: onlyDemo.size, dropped: [RELEASE1] });
    expect(await presentObjects(onlyDemo, PREFIX)).toBe(0);
    expect(await presentObjects(objects2, PREFIX)).toBe(objects2.size);
    expect((await history()).retired.map((r: { release: string }) => r.release)).toEqual(['2026.12-test']);

    // A KeyValueStore gc cannot read, or a pin it cannot resolve: nothing is deleted.
    const down = await unreachable();
    const refused = collectGarbage({ ...store, now: at(later), kvs: down });
    await expect(refused).rejects.toBeInstanceOf(StorageError);
    await expect(refused).rejects.toThrow(
      new RegExp(`on the CDN's KeyValueStore ${ARN_A} at ${down.endpoint} failed: .*gc changed nothing`),
    );
    await expect(collectGarbage({ ...store, now: at(later) })).rejects.toThrow(/gc needs to reach it/);
    const r = await cli(['gc', ...s3Args(), '--kvs-endpoint', down.endpoint]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`${ARN_A} at ${down.endpoint} failed`);
    kvsA.entries.set(CURRENT_RELEASE_ENTRY, '1999.01-none');
    const unknownPin = collectGarbage({ ...store, now: at(later), kvs: await clientA() });
    await expect(unknownPin).rejects.toBeInstanceOf(StorageError);
    await expect(unknownPin).rejects.toThrow(
      /pins release 1999\.01-none, which .* no longer lists, so its objects are unknown; gc deleted nothing/,
    );
    expect(await presentObjects(objects2, PREFIX)).toBe(objects2.size);
    kvsA.entries.set(CURRENT_RELEASE_ENTRY, '2027.02-a');
  });

  it('--replace-kvs moves the store to another KeyValueStore on purpose', async () => {
    await expect(
      publish({
        ...store,
        dir: release4b,
        progress: false,
        kvs: { ...(await clientA()), arn: ARN_B, replaces: ARN_B },
      }),
    ).rejects.toThrow(new RegExp(`--replace-kvs ${ARN_B}, but .*edge.json records ${ARN_A}`));
    await publish({
      ...store,
      dir: release4b,
      progress: false,
      kvs: { client: await kvsClient(kvsB.url), endpoint: kvsB.url, arn: ARN_B, replaces: ARN_A },
    });
    expect(await edgeRecord()).toMatchObject({ kvs: ARN_B });
    expect(kvsB.entries.get(CURRENT_RELEASE_ENTRY)).toBe('2027.02-b');
    expect(kvsA.entries.get(CURRENT_RELEASE_ENTRY)).toBe('2027.02-a');
  });
});
