// Publishing against a real S3-protocol server (s3rver, started here, with S3's conditional writes):
// release 1, served through the edge's S3 origin; release 2 differing in a few genes uploads only the
// objects the store lacks and copies nothing; readers during the publish always see one release; a
// publish killed mid-way leaves release 1 serving and resumes; concurrent publishes both end in the
// history; rollback switches readers; gc keeps what kept releases reference and removes the rest. A
// tree changed after its build is refused before anything is written. Then a mirror of that bucket,
// and the pointer's cache. (The CDN's pin, and the races between commands, are in
// publish-kvs.test.ts and publish-races.test.ts, each with an S3 server of its own: the setting they
// share is helpers/publish-setup.ts.)
import { describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { bundleEdge } from '../build/bundle/edge.js';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { listReleases, publish, rollback, s3Client, OBJECT_CACHE_CONTROL } from '../build/publish/publish.js';
import { collectGarbage } from '../build/publish/collect.js';
import { createHandler, releasesOf } from '../edge/handler.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { objectKey } from '../edge/contract/store-layout.js';
import { locateStructureFile } from '../edge/endpoints/structure-redirect.js';
import { RELEASE_HEADER } from '../edge/contract/routes.js';
import { withoutRelease } from './helpers/pinned.js';
import { validate } from './helpers/schemas.js';
import { startFakeCloudFront } from './helpers/fake-cloudfront.js';
import { CloudFrontClient } from '@aws-sdk/client-cloudfront';
import { S3RawOrigin } from '../edge/origins/s3.js';
import { BadInputError } from '../build/common/errors.js';
import { treePaths } from '../edge/contract/tree.js';
import { readManifest, readStructureMap } from './helpers/tree.js';
import { startS3rver } from './helpers/s3rver.js';
import { startHoldingProxy } from './helpers/holding-proxy.js';
import { PHASES } from '../build/publish/phases.js';
import { BUCKET, RELEASE1, changedGenes, usePublishStore, server, s3, dir } from './helpers/publish-setup.js';
import { release1, release2, release3, release4a, release4b, deriveRelease, gene } from './helpers/publish-setup.js';
import { objectsOf, publishedOf, referencedOf, presentObjects, recording } from './helpers/publish-setup.js';

const currentRelease = async (handler: ReturnType<typeof createHandler>) =>
  ((await (await handler(new Request('http://atlas.test/api/v1/release'))).json()) as { release: string }).release;

/** The real CloudFront client, sending to a local stand-in. */
const cloudFrontAt = (endpoint: string) => new CloudFrontClient({ region: 'us-east-1', endpoint });

usePublishStore(startS3rver);

describe('publish to S3 (s3rver)', () => {
  it('publishes release 1 as content-addressed objects, then the history and the pointer', async () => {
    const s = await publish({ dir: release1, bucket: BUCKET, s3, progress: false });
    // The tree's objects, then manifest.json naming its pack list, the list and each pack's index.
    const published = await publishedOf(release1);
    const objects = new Set([...objectsOf(release1), ...published.objects]);
    // The first release has no release to be encoded against: its shards are the tree's.
    expect(objects.size - objectsOf(release1).size).toBe(2 + s.packs);
    expect(s.packs).toBeGreaterThan(0);
    expect(s).toMatchObject({
      release: RELEASE1,
      previous: null,
      objects: objects.size,
      uploaded: objects.size,
      present: 0,
    });
    const sha = createHash('sha256').update(gene(release1, 'ENSG00000186654')).digest('hex');
    const head = await s3.send(
      new HeadObjectCommand({ Bucket: BUCKET, Key: `objects/${sha.slice(0, 2)}/${sha.slice(2)}` }),
    );
    expect(head.ContentType).toBe('application/json; charset=utf-8');
    expect(head.CacheControl).toBe(OBJECT_CACHE_CONTROL);
    const cifSha = readManifest(release1).entries.find(
      (e) => e.path === Object.values(readStructureMap(release1))[0].path,
    )!.sha256;
    expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: objectKey(cifSha) }))).ContentType).toBe(
      'chemical/x-mmcif',
    );
    const manifestSha = published.manifest;
    const pointer = JSON.parse(
      await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'current.json' }))).Body!.transformToString(),
    );
    expect(pointer).toMatchObject({
      format: 2,
      release: RELEASE1,
      manifest_sha256: manifestSha,
      previous: null,
    });
    const listing = await listReleases({ s3, bucket: BUCKET });
    expect(listing).toMatchObject({
      current: RELEASE1,
      releases: [{ release: RELEASE1, manifest_sha256: manifestSha, current: true }],
      pending: [],
      retired: [],
    });
  });

  it('is served by the edge function through its S3 origin, structure files through the store', async () => {
    const origin = new StoreOrigin(new S3RawOrigin(s3, BUCKET));
    const handler = createHandler({ origin });
    const r = await handler(new Request('http://atlas.test/api/v1/genes/prr5'));
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(gene(release1, 'ENSG00000186654'));
    const [id] = Object.keys(readStructureMap(release1));
    const redirect = await handler(new Request(`http://atlas.test/api/v1/isoforms/${id}/structure`));
    // Root-relative, below the release: the CDN's origin-request function sends it to the object.
    const location = redirect.headers.get('Location')!;
    expect(location).toBe(`/releases/${RELEASE1}/structures/${id}.cif`);
    const found = await locateStructureFile(new Request(`http://atlas.test${location}`), releasesOf({ origin }));
    const cif = readManifest(release1).entries.find((e) => e.path === treePaths.structureFile(id))!;
    expect(found).toEqual({ sha256: cif.sha256, size: cif.size });
    const unknown = await locateStructureFile(
      new Request(`http://atlas.test/releases/1999.01-none/structures/${id}.cif`),
      releasesOf({ origin }),
    );
    expect((unknown as Response).status).toBe(404);
  });

  it('in the deployed bundle, a release file request goes on to its object in the bucket', async () => {
    mkdirSync(join(__dirname, '../.isoatlas'), { recursive: true });
    const out = mkdtempSync(join(__dirname, '../.isoatlas/edge-bundle-'));
    try {
      const bundle = await bundleEdge({
        outDir: out,
        s3: { bucket: BUCKET, region: 'us-east-1', endpoint: server.endpoint },
      });
      const onOriginRequest = createRequire(import.meta.url)(bundle.file).handler as (
        e: unknown,
      ) => Promise<{ uri?: string; status?: string; headers: Record<string, { value: string }[]> }>;
      const event = (uri: string) => ({
        Records: [
          {
            cf: {
              config: { distributionDomainName: 'd1.cloudfront.net', eventType: 'origin-request' },
              request: {
                clientIp: '203.0.113.9',
                method: 'GET',
                uri,
                querystring: '',
                headers: { host: [{ key: 'Host', value: 'bucket.s3.amazonaws.com' }] },
              },
            },
          },
        ],
      });
      const [id] = Object.keys(readStructureMap(release1));
      const cif = readManifest(release1).entries.find((e) => e.path === treePaths.structureFile(id))!;
      const forwarded = await onOriginRequest(event(`/releases/${RELEASE1}/structures/${id}.cif`));
      expect(forwarded.status).toBeUndefined(); // a request sent on, not an answer
      expect(forwarded.uri).toBe(`/${objectKey(cif.sha256)}`);
      const missing = await onOriginRequest(event(`/releases/${RELEASE1}/structures/ENST00000000000.1.cif`));
      expect(missing.status).toBe('404');
      expect(missing.headers['content-type'][0].value).toMatch(/^application\/problem\+json/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('uploads only the objects release 2 adds, copies nothing, while readers see exactly one release per response', async () => {
    const reader = createHandler({ origin: new StoreOrigin(new S3RawOrigin(s3, BUCKET), 0) }); // re-read the pointer every time
    const oldGene = gene(release1, 'ENSG00000186654');
    const newGene = gene(release2, 'ENSG00000186654');
    let publishing = true;
    const seen = { old: 0, new: 0, other: [] as string[] };
    const reading = (async () => {
      while (publishing) {
        const [g, rel, pinned] = await Promise.all([
          reader(new Request('http://atlas.test/api/v1/genes/PRR5')),
          reader(new Request('http://atlas.test/api/v1/release')),
          reader(new Request(`http://atlas.test/api/v1/genes/PRR5?release=${RELEASE1}`)),
        ]);
        // A reader that pinned release 1 gets release 1 throughout.
        if (
          withoutRelease(await pinned.text(), RELEASE1) !== oldGene ||
          pinned.headers.get(RELEASE_HEADER) !== RELEASE1
        )
          seen.other.push('a pinned read not of release 1');
        const body = await g.text();
        const release = ((await rel.json()) as { release: string }).release;
        if (g.status !== 200) seen.other.push(`gene ${g.status}`);
        else if (body === oldGene && release === RELEASE1) seen.old++;
        else if (body === newGene && release === '2026.12-test') seen.new++;
        else if (body !== oldGene && body !== newGene) seen.other.push('a gene body of neither release');
        // (a gene and a /release fetched concurrently may straddle the switch; each alone is whole)
      }
    })();
    // What reaches the server, counted by a proxy in front of it.
    const proxy = await startHoldingProxy(server.endpoint);
    const through = s3Client({ endpoint: proxy.endpoint, region: 'us-east-1' });
    const debug: string[] = [];
    const s = await publish({
      dir: release2,
      bucket: BUCKET,
      s3: through,
      progress: false,
      debug: (l) => debug.push(l),
    }).finally(() => {
      through.destroy();
      return proxy.close();
    });
    publishing = false;
    await reading;
    // The publish has moved the pointer: a reader that re-reads it gets release 2 from now on.
    if (seen.new === 0 && (await (await reader(new Request('http://atlas.test/api/v1/genes/PRR5'))).text()) === newGene)
      seen.new++;
    const before = await referencedOf(release1);
    const published = await publishedOf(release2);
    const added = [...published.objects].filter((sha) => !before.has(sha));
    // 3 genes + release.json changed, so did the manifest shards listing them, manifest.json, its pack
    // list and the index of the new pack. The list also names release 1's packs that hold objects
    // release 2 lists (their indexes are in the store).
    expect(added.length).toBeGreaterThanOrEqual(4 + 1 + 1 + 2);
    const shared = published.packs.length - s.packs;
    expect(shared).toBeGreaterThan(0);
    expect(s).toMatchObject({
      release: '2026.12-test',
      previous: RELEASE1,
      uploaded: added.length,
      objects: published.objects.size,
      packs: 1,
    });
    expect(s.present).toBe(s.objects - s.uploaded);
    // + pending, kept, pointer; the two probes of conditional writes; the new pack.
    const sent = proxy.forwarded;
    expect(sent.filter((r) => r.method === 'PUT')).toHaveLength(s.uploaded + 3 + 2 + s.packs);
    // Each object once, under its sha256: nothing is copied (a PUT per object the store lacks).
    const objectPuts = sent.filter((r) => r.method === 'PUT' && r.path.startsWith(`/${BUCKET}/objects/`));
    expect(new Set(objectPuts.map((r) => r.path)).size).toBe(s.uploaded);
    // What the store holds is known from release 1's manifest: no HEAD per object, no listing.
    expect(
      sent.filter((r) => r.method === 'HEAD' || (r.method === 'GET' && r.path.replace(/\/$/, '') === `/${BUCKET}`)),
    ).toEqual([]);
    // Where the time went, phase by phase (`--log-level debug`), and when the first object went up.
    for (const phase of PHASES) {
      expect(s.phases.seconds[phase]).toBeGreaterThanOrEqual(0);
      expect(debug.some((l) => l.startsWith(`publish phase ${phase}: `))).toBe(true);
    }
    expect(s.phases.firstUpload).toBeGreaterThan(0);
    expect(s.phases.firstUpload).toBeLessThan(s.seconds);
    expect(seen.other).toEqual([]);
    expect(seen.old).toBeGreaterThan(0);
    expect(seen.new).toBeGreaterThan(0);
  });

  it('answers from either kept release when asked with ?release=, from the current one otherwise, naming it every time', async () => {
    const h = createHandler({ origin: new StoreOrigin(new S3RawOrigin(s3, BUCKET), 0) });
    const ask = async (query = '') => {
      const r = await h(new Request(`http://atlas.test/api/v1/genes/PRR5${query}`));
      return { status: r.status, release: r.headers.get(RELEASE_HEADER), body: await r.text() };
    };
    // A pinned answer's links carry its release (edge/pinning.ts); the rest is the file.
    const pinned = async (release: string) => {
      const r = await ask(`?release=${release}`);
      return { ...r, body: withoutRelease(r.body, release) };
    };
    expect(await pinned(RELEASE1)).toEqual({
      status: 200,
      release: RELEASE1,
      body: gene(release1, 'ENSG00000186654'),
    });
    expect(await pinned('2026.12-test')).toEqual({
      status: 200,
      release: '2026.12-test',
      body: gene(release2, 'ENSG00000186654'),
    });
    expect(await ask()).toEqual({ status: 200, release: '2026.12-test', body: gene(release2, 'ENSG00000186654') });
    expect((await ask('?release=1999.01-none')).status).toBe(404);
    const listing = await (await h(new Request('http://atlas.test/api/v1/releases'))).json();
    expect(validate('ReleaseList', listing)).toEqual([]);
    expect(listing).toMatchObject({
      current: '2026.12-test',
      releases: [
        { release: RELEASE1, current: false },
        { release: '2026.12-test', current: true },
      ],
    });
  });

  it('leaves the current release serving when a publish dies mid-way, and a re-run uploads only the rest', async () => {
    // A server whose object uploads fail after the first one once the release is pending (500, every
    // attempt): the publish of release 3 dies part-way through its files (it adds two: a gene and
    // release.json).
    let writes = 0;
    let pending = false;
    const proxy = await startHoldingProxy(server.endpoint);
    proxy.fail((method, path) => {
      if (method === 'PUT' && path === `/${BUCKET}/releases.json`) pending = true;
      return method === 'PUT' && path.startsWith(`/${BUCKET}/objects/`) && pending && ++writes > 1;
    });
    const flaky = s3Client({ endpoint: proxy.endpoint, region: 'us-east-1' });
    // The tree's files (its shards are published as deltas, not as they are in the tree).
    const objects3 = new Set(readManifest(release3).entries.map((e) => e.sha256));
    const missingBefore = objects3.size - (await presentObjects(objects3));
    expect(missingBefore).toBeGreaterThan(1);
    await expect(
      publish({ dir: release3, bucket: BUCKET, s3: flaky, progress: false, concurrency: 1 }).finally(() => {
        flaky.destroy();
        return proxy.close();
      }),
    ).rejects.toMatchObject({ name: 'InternalError', $metadata: { httpStatusCode: 500 } });
    const handler = createHandler({ origin: new StoreOrigin(new S3RawOrigin(s3, BUCKET), 0) });
    expect(await currentRelease(handler)).toBe('2026.12-test'); // the pointer never moved
    expect((await listReleases({ s3, bucket: BUCKET })).pending.map((p) => p.release)).toEqual(['2027.01-test']);
    const missingAfter = objects3.size - (await presentObjects(objects3));
    expect(missingAfter).toBeGreaterThan(0);
    expect(missingAfter).toBeLessThan(missingBefore);

    const cloudfront = await startFakeCloudFront();
    const resumed = await publish({
      dir: release3,
      bucket: BUCKET,
      s3,
      progress: false,
      distributionId: 'E2PUBLISHTEST',
      cloudfront: cloudFrontAt(cloudfront.url),
    }).finally(() => cloudfront.close());
    // A deployment without a KeyValueStore: the cached API answers and the pointer are invalidated.
    expect(cloudfront.invalidations).toEqual([
      { distributionId: 'E2PUBLISHTEST', paths: ['/api/v1/*', '/current.json'] },
    ]);
    expect(resumed.invalidated).toEqual(['/api/v1/*', '/current.json']);
    expect(resumed.uploaded).toBe(missingAfter); // what the dead run wrote is not written again
    // The dead run's pack went up beside its objects (the publish waited for it before failing).
    expect(resumed.packs).toBe(0);
    const published3 = await referencedOf(release3);
    expect(await presentObjects(published3)).toBe(published3.size);
    expect(await (await handler(new Request('http://atlas.test/api/v1/genes/PRR5'))).text()).toBe(
      gene(release3, 'ENSG00000186654'),
    );
    expect((await listReleases({ s3, bucket: BUCKET })).pending).toEqual([]);
  });

  it('rolls back to the previous release in one pointer write, again to the one before, refuses past the earliest, and rolling back to the current one is a no-op', async () => {
    const handler = createHandler({ origin: new StoreOrigin(new S3RawOrigin(s3, BUCKET), 0) });
    const cloudfront = await startFakeCloudFront();
    const r = await rollback({
      s3,
      bucket: BUCKET,
      distributionId: 'E2ROLLBACKTEST',
      cloudfront: cloudFrontAt(cloudfront.url),
    }).finally(() => cloudfront.close());
    // As publish does, with the same paths.
    expect(r).toEqual({
      from: '2027.01-test',
      to: '2026.12-test',
      changed: true,
      invalidated: ['/api/v1/*', '/current.json'],
    });
    expect(cloudfront.invalidations).toEqual([
      { distributionId: 'E2ROLLBACKTEST', paths: ['/api/v1/*', '/current.json'] },
    ]);
    expect(await currentRelease(handler)).toBe('2026.12-test');
    // A reader that pinned a release is not moved by a rollback.
    expect(
      (
        (await (await handler(new Request('http://atlas.test/api/v1/release?release=2027.01-test'))).json()) as {
          release: string;
        }
      ).release,
    ).toBe('2027.01-test');
    expect(
      await rollback({
        s3,
        bucket: BUCKET,
        to: '2026.12-test',
        distributionId: 'E2ROLLBACKTEST',
        cloudfront: { send: () => Promise.reject(new Error('nothing changed: no invalidation')) },
      }),
    ).toEqual({
      from: '2026.12-test',
      to: '2026.12-test',
      changed: false,
      invalidated: [],
    });
    await expect(rollback({ s3, bucket: BUCKET, to: '1999.01-none' })).rejects.toThrow(/not \(or no longer\) kept/);
    // Back is back in the history: a second rollback goes back once more, and from the earliest kept
    // release it refuses, saying where the history is, rather than moving forward again.
    expect(await rollback({ s3, bucket: BUCKET })).toMatchObject({ from: '2026.12-test', to: RELEASE1, changed: true });
    await expect(rollback({ s3, bucket: BUCKET })).rejects.toThrow(
      new RegExp(
        `${RELEASE1} is the earliest release kept in .*nothing before it to roll back to: see \`isoatlas releases\``,
      ),
    );
    expect(await currentRelease(handler)).toBe(RELEASE1);
    expect(await rollback({ s3, bucket: BUCKET, to: '2026.12-test' })).toMatchObject({ changed: true });
  });

  it('refuses to publish a release name again with other content', async () => {
    const other = await deriveRelease('2026.12-test', changedGenes.slice(0, 1), 'another-2026.12-test');
    await expect(publish({ dir: other, bucket: BUCKET, s3, progress: false })).rejects.toThrow(
      /already in .* with other content/,
    );
  });

  it('two concurrent publishes both end in the history, and current.json names the newer', async () => {
    const [a, b] = await Promise.allSettled([
      publish({ dir: release4a, bucket: BUCKET, s3, progress: false }),
      publish({ dir: release4b, bucket: BUCKET, s3, progress: false }),
    ]);
    const listing = await listReleases({ s3, bucket: BUCKET });
    expect(listing.releases.map((r) => r.release)).toEqual(
      expect.arrayContaining([RELEASE1, '2026.12-test', '2027.01-test', '2027.02-a', '2027.02-b']),
    );
    expect(listing.pending).toEqual([]);
    // The one kept last is current; the other may have lost the pointer to it, and then says so.
    const newest = listing.releases.at(-1)!.release;
    expect(listing.current).toBe(newest);
    for (const [settled, release] of [
      [a, '2027.02-a'],
      [b, '2027.02-b'],
    ] as const) {
      if (settled.status === 'fulfilled') expect(settled.value.release).toBe(release);
      else
        expect(settled.reason.message).toContain(
          `was not moved to ${release}: while it was being published, ${newest} became the newest kept release`,
        );
    }
    expect([a.status, b.status]).toContain('fulfilled');
  });

  it('the stand-in S3 refuses stale conditional writes as S3 does, so the test above can fail', async () => {
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'releases.json' }));
    const body = await got.Body!.transformToString();
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'releases.json', Body: body, IfMatch: got.ETag }));
    const stale = s3.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: 'releases.json',
        Body: '{}',
        IfMatch: '"0123456789abcdef0123456789abcdef"',
      }),
    );
    await expect(stale).rejects.toMatchObject({ $metadata: { httpStatusCode: 412 } });
    const create = s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'current.json', Body: '{}', IfNoneMatch: '*' }));
    await expect(create).rejects.toMatchObject({ $metadata: { httpStatusCode: 412 } });
    expect(
      await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'releases.json' }))).Body!.transformToString(),
    ).toBe(body);
  });

  it('--keep retires older releases; gc removes only what no kept release references, after the grace period', async () => {
    const s = await publish({ dir: release3, bucket: BUCKET, s3, progress: false, keep: 3 });
    expect(s.release).toBe('2027.01-test');
    const listing = await listReleases({ s3, bucket: BUCKET });
    expect(listing.releases.map((r) => r.release).sort()).toEqual(['2027.01-test', '2027.02-a', '2027.02-b']);
    expect(listing.current).toBe('2027.01-test');
    expect(listing.retired.map((r) => r.release).sort()).toEqual([RELEASE1, '2026.12-test']);

    // Within the grace period nothing is deleted: retired releases still protect their objects.
    expect((await collectGarbage({ s3, bucket: BUCKET })).deleted).toBe(0);
    // Past it (a clock three days on), the objects only retired releases reference go.
    const later = () => new Date(Date.now() + 72 * 3_600_000);
    const kept = new Set<string>();
    for (const r of [release3, release4a, release4b]) for (const sha of await referencedOf(r)) kept.add(sha);
    const retired = [...(await referencedOf(release1)), ...(await referencedOf(release2))];
    const onlyRetired = new Set(retired.filter((sha) => !kept.has(sha)));
    expect(onlyRetired.size).toBeGreaterThan(0);
    const dry = await collectGarbage({ s3, bucket: BUCKET, now: later, dryRun: true });
    expect(dry.deleted).toBe(onlyRetired.size);
    expect(await presentObjects(onlyRetired)).toBe(onlyRetired.size); // a dry run deletes nothing
    const done = await collectGarbage({ s3, bucket: BUCKET, now: later });
    expect(done.deleted).toBe(onlyRetired.size);
    expect(done.dropped.sort()).toEqual([RELEASE1, '2026.12-test']);
    expect(await presentObjects(onlyRetired)).toBe(0);
    expect(await presentObjects(kept)).toBe(kept.size);
    expect((await listReleases({ s3, bucket: BUCKET })).retired).toEqual([]);
    const handler = createHandler({ origin: new StoreOrigin(new S3RawOrigin(s3, BUCKET), 0) });
    expect(await (await handler(new Request('http://atlas.test/api/v1/genes/PRR5'))).text()).toBe(
      gene(release3, 'ENSG00000186654'),
    );
  });
});

describe('a tree changed after its build is refused before anything is written', () => {
  /** A copy of release 1 with one gene file damaged. */
  const damaged = (name: string, damage: (file: string) => void) => {
    const out = join(dir, `damaged-${name}`);
    cpSync(release1, out, { recursive: true });
    damage(join(out, treePaths.gene(changedGenes[0])));
    return out;
  };
  const flipByte = (file: string) => {
    const body = readFileSync(file);
    body[body.length - 2] ^= 1;
    writeFileSync(file, body);
  };
  const cases: [string, (file: string) => void, RegExp][] = [
    ['edited', flipByte, /its sha256 is not the one the manifest lists/],
    [
      'truncated',
      (file) => writeFileSync(file, readFileSync(file).subarray(0, 10)),
      /10 bytes, the manifest lists \d+/,
    ],
    ['deleted', (file) => rmSync(file), /\(missing\)/],
  ];
  for (const [name, damage, why] of cases) {
    it(`${name}: exit 3's error names the file and what to do; no object, no pending entry`, async () => {
      const tree = damaged(name, damage);
      const commands: string[] = [];
      const prefix = `damaged-${name}/`;
      const err = await publish({ dir: tree, bucket: BUCKET, prefix, s3: recording(commands), progress: false }).catch(
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(BadInputError);
      expect((err as Error).message).toContain(
        `1 file of the tree ${tree} does not match its manifest.json: ${treePaths.gene(changedGenes[0])} (`,
      );
      expect((err as Error).message).toMatch(why);
      expect((err as Error).message).toContain(
        `build it again (\`isoatlas build --force\`) and publish that. Nothing was written to s3://${BUCKET}/${prefix}`,
      );
      expect(commands.filter((c) => c !== 'GetObjectCommand')).toEqual([]);
      expect(await listReleases({ s3, bucket: BUCKET, prefix })).toMatchObject({
        current: null,
        releases: [],
        pending: [],
      });
      expect(await presentObjects(objectsOf(release1), prefix)).toBe(0);
    });
  }

  it('hashes only what it uploads: a damaged copy of an object the store has is never read, a damaged new one is refused', async () => {
    const prefix = 'shared/';
    await publish({ dir: release1, bucket: BUCKET, prefix, s3, progress: false });
    // A gene release 2 does not change: its object is in the store, its bytes in the tree are not read.
    const unchanged = treePaths.gene(
      readManifest(release1)
        .entries.map((e) => e.path)
        .find((p) => p.startsWith('api/v1/genes/ENSG') && !changedGenes.some((g) => p.includes(g)))!
        .split('/')
        .pop()!
        .replace('.json', ''),
    );
    const next = await deriveRelease('2026.12-shared', changedGenes, 'shared-next');
    const original = readFileSync(join(next, unchanged));
    flipByte(join(next, unchanged));
    const s = await publish({ dir: next, bucket: BUCKET, prefix, s3, progress: false });
    expect(s.uploaded).toBeGreaterThan(0);
    const sha = createHash('sha256').update(original).digest('hex');
    const stored = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: prefix + objectKey(sha) }));
    expect(Buffer.from(await stored.Body!.transformToByteArray()).equals(original)).toBe(true);
    // A file the publish would upload is hashed.
    const third = await deriveRelease('2027.01-shared', changedGenes.slice(0, 1), 'shared-third');
    flipByte(join(third, treePaths.gene(changedGenes[0])));
    await expect(publish({ dir: third, bucket: BUCKET, prefix, s3, progress: false })).rejects.toThrow(
      new RegExp(`${treePaths.gene(changedGenes[0])} \\(its sha256`),
    );
    expect((await listReleases({ s3, bucket: BUCKET, prefix })).pending).toEqual([]);
  });

  it('a garbage manifest.json is bad input (exit 3) naming the file and what to do', async () => {
    const tree = join(dir, 'garbage-manifest');
    cpSync(release1, tree, { recursive: true });
    writeFileSync(join(tree, treePaths.manifest), '{"format": 1, "rel');
    const err = await publish({ dir: tree, bucket: BUCKET, prefix: 'garbage/', s3, progress: false }).catch(
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(BadInputError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^${tree}/manifest.json: not JSON \\(.*\\); build the tree again \\(\`isoatlas build --force\`\\) and publish that; nothing was written to the store$`,
      ),
    );
  });
});

describe('mirror from s3://', () => {
  it('copies releases of the bucket into a local store the server can serve, pinning included', async () => {
    const { mirror } = await import('../edge/mirror/mirror.js');
    const to = join(dir, 'mirror-from-s3');
    const s = await mirror({
      from: `s3://${BUCKET}`,
      to,
      endpoint: server.endpoint,
      region: 'us-east-1',
      progress: false,
      releases: ['2027.02-a'],
    });
    expect(s).toMatchObject({ release: '2027.01-test', releases: ['2027.02-a', '2027.01-test'], reused: 0 });
    const objects3 = await referencedOf(release3);
    expect(s.fetched).toBe(new Set([...objects3, ...(await referencedOf(release4a))]).size);
    for (const sha of objects3)
      expect(
        createHash('sha256')
          .update(readFileSync(join(to, objectKey(sha))))
          .digest('hex'),
      ).toBe(sha);
    const handler = createHandler({ origin: new StoreOrigin(new LocalOrigin(to)) });
    expect(await (await handler(new Request('http://atlas.test/api/v1/genes/PRR5'))).text()).toBe(
      gene(release3, 'ENSG00000186654'),
    );
    expect(
      withoutRelease(
        await (await handler(new Request('http://atlas.test/api/v1/genes/PRR5?release=2027.02-a'))).text(),
        '2027.02-a',
      ),
    ).toBe(gene(release4a, 'ENSG00000186654'));
  });
});

describe('the release pointer', () => {
  it('keeps serving the pinned release when re-reading the pointer fails, and fails only without one', async () => {
    let broken = false;
    let now = 0;
    const raw = new S3RawOrigin(s3, BUCKET);
    const flaky = {
      description: 'flaky',
      read: (path: string) =>
        broken && path === 'current.json'
          ? Promise.resolve({ body: new TextEncoder().encode('{"trunc') })
          : raw.read(path),
    };
    const origin = new StoreOrigin(flaky, 10, () => now);
    const first = (await origin.pin())!;
    broken = true;
    now = 100; // past the pointer's TTL: it is read again, and the read fails
    expect((await origin.pin())!.release).toBe(first.release);
    await expect(new StoreOrigin(flaky).pin()).rejects.toThrow(/not an isoatlas release pointer|JSON/);
  });
});
