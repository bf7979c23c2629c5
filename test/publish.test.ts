// Publishing against a real S3-protocol server (s3rver, started here, with S3's conditional writes):
// release 1, served through the edge's S3 origin; release 2 differing in a few genes uploads only the
// objects the store lacks and copies nothing; readers during the publish always see one release; a
// publish killed mid-way leaves release 1 serving and resumes; concurrent publishes both end in the
// history; rollback switches readers; gc keeps what kept releases reference and removes the rest.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { bundleEdge } from '../build/bundle/edge.js';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { listReleases, publish, rollback, s3Client, OBJECT_CACHE_CONTROL } from '../build/publish/publish.js';
import { collectGarbage } from '../build/publish/collect.js';
import { createHandler, releasesOf } from '../edge/handler.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { HISTORY_KEY, objectKey, parseHistory } from '../edge/contract/store-layout.js';
import { loadManifest } from '../build/common/manifest-reader.js';
import { locateStructureFile } from '../edge/endpoints/structure-redirect.js';
import { DEFAULT_RELEASE_PARAM, RELEASE_HEADER } from '../edge/contract/routes.js';
import { withoutRelease } from './helpers/pinned.js';
import { validate } from './helpers/schemas.js';
import { startFakeKvs, type FakeKvs } from './helpers/fake-kvs.js';
import { startFakeCloudFront } from './helpers/fake-cloudfront.js';
import { CloudFrontClient } from '@aws-sdk/client-cloudfront';
import { StorageError } from '../build/common/storage-errors.js';
import { BadInputError } from '../build/common/errors.js';
import { spawn } from 'node:child_process';
import { freePort } from './helpers/ports.js';
import { kvsClient } from '../build/keys/commands.js';
import { CURRENT_RELEASE_ENTRY } from '../edge/cloudfront/kvs-layout.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { loadCloudFrontFunction, viewerRequest } from './helpers/cloudfront-function.js';
import { S3RawOrigin } from '../edge/origins/s3.js';
import { treePaths } from '../edge/contract/tree.js';
import { parsePackList } from '../edge/contract/packs.js';
import { startS3rver, type S3rverProcess } from './helpers/s3rver.js';
import { startHoldingProxy, type HoldingProxy } from './helpers/holding-proxy.js';
import { literally, readManifest, readStructureMap, rewriteTree } from './helpers/tree.js';
import Database from 'better-sqlite3';
import { copyFileSync } from 'node:fs';
import { renderTree } from '../build/render/index.js';
import { fixtureGenes } from './helpers/fixture-release.js';

/** The first release these tests publish: the fixture's, cut down. */
const RELEASE1 = fixtureGenes().release;
const RELEASE1_PATTERN = literally(RELEASE1);

const BUCKET = 'atlas';
let server: S3rverProcess;
let dir: string;
let s3: S3Client;
let release2: string;
let release3: string;
let release4a: string;
let release4b: string;
const changedGenes = ['ENSG00000186654', 'ENSG00000100320', 'ENSG00000128185'];

/** A smaller but complete release for these tests (s3rver needs ~3 ms an object): the fixture
 * release's database cut down further (the genes below, those with structures, and the first by id),
 * rendered by the real renderer. */
async function smallRelease(): Promise<string> {
  const db = join(dir, 'small.sqlite');
  copyFileSync(inject('fixtureDb'), db);
  const d = new Database(db);
  d.exec(`
    CREATE TEMP TABLE keep AS
      SELECT gene_id FROM genes WHERE gene_id IN ('${changedGenes.join("','")}')
      UNION SELECT gene_id FROM isoforms WHERE transcript_id IN (SELECT transcript_id FROM structures LIMIT 10)
      UNION SELECT gene_id FROM (SELECT gene_id FROM genes ORDER BY gene_id LIMIT 35);
    CREATE TEMP TABLE gone AS SELECT transcript_id FROM isoforms WHERE gene_id NOT IN (SELECT gene_id FROM keep);
    DELETE FROM domains WHERE transcript_id IN (SELECT transcript_id FROM gone);
    DELETE FROM neoantigens WHERE transcript_id IN (SELECT transcript_id FROM gone);
    DELETE FROM ptm_sites WHERE transcript_id IN (SELECT transcript_id FROM gone);
    DELETE FROM structures WHERE transcript_id IN (SELECT transcript_id FROM gone);
    UPDATE genes SET canonical_transcript_id = NULL WHERE gene_id NOT IN (SELECT gene_id FROM keep);
    DELETE FROM isoforms WHERE transcript_id IN (SELECT transcript_id FROM gone);
    DELETE FROM gene_info WHERE gene_id NOT IN (SELECT gene_id FROM keep);
    DELETE FROM genes WHERE gene_id NOT IN (SELECT gene_id FROM keep);`);
  d.close();
  await renderTree(db, join(dir, 'small'), { progress: false });
  return join(dir, 'small');
}
let release1: string;

/** A copy of release 1 as another release: a new release name, and a few gene records changed. */
async function deriveRelease(name: string, genes: string[], dirName = name): Promise<string> {
  const out = join(dir, dirName);
  cpSync(release1, out, { recursive: true });
  const changed = (path: string, change: (body: Record<string, unknown>) => void) => {
    const body = JSON.parse(readFileSync(join(out, path), 'utf8'));
    change(body);
    return [path, JSON.stringify(body)];
  };
  await rewriteTree(
    out,
    Object.fromEntries([
      ...genes.map((g) => changed(treePaths.gene(g), (b) => (b.biotype = `changed in ${name}`))),
      changed(treePaths.release, (r) => (r.release = name)),
    ]),
    name,
  );
  return out;
}

/** The distinct objects of a tree that publish stores as they are: every file's sha256 and its
 * manifest shards'. (manifest.json is published with its pack list named in it: see publishedOf.) */
function objectsOf(root: string): Set<string> {
  const { index, entries } = readManifest(root);
  return new Set([...entries.map((e) => e.sha256), ...index.shards.map((s) => s.sha256)]);
}

/** The objects a tree's release consists of in the bucket: its files; the manifest publish wrote for
 * it (encoded against the release current then, so not the tree's own) with every shard object it
 * references; the pack list it names and the pack indexes that list names. Also its packs. A release
 * the bucket does not hold (yet, or any more) is its tree's objects. */
async function publishedOf(
  root: string,
  prefix = '',
): Promise<{ manifest: string | null; objects: Set<string>; packs: string[] }> {
  const release = readManifest(root).index.release;
  const raw = new S3RawOrigin(s3, BUCKET, prefix);
  const got = await raw.read(HISTORY_KEY);
  const h = got ? parseHistory(new TextDecoder().decode(got.body)) : null;
  const object = async (sha: string) => {
    const o = await raw.read(objectKey(sha));
    return o && Buffer.from(o.body);
  };
  for (const r of h ? [...h.releases, ...h.pending, ...h.retired].filter((x) => x.release === release) : []) {
    const manifest = await loadManifest(
      (path, listed) => object(path === treePaths.manifest ? r.manifest_sha256 : listed!.sha256),
      `${prefix}`,
    ).catch(() => null);
    if (!manifest) continue;
    const objects = new Set([
      r.manifest_sha256,
      ...manifest.shards.map((x) => x.entry.sha256),
      ...manifest.entries.map((e) => e.sha256),
    ]);
    const packs: string[] = [];
    if (manifest.index.packs) {
      const list = parsePackList((await object(manifest.index.packs.sha256))!, 'pack list');
      objects.add(manifest.index.packs.sha256);
      for (const p of list.packs) {
        objects.add(p.index.sha256);
        packs.push(p.sha256);
      }
    }
    return { manifest: r.manifest_sha256, objects, packs };
  }
  return { manifest: null, objects: objectsOf(root), packs: [] };
}

/** Every object a published release references (publishedOf). */
const referencedOf = async (root: string, prefix = '') => (await publishedOf(root, prefix)).objects;

const gene = (root: string, id: string) => readFileSync(join(root, treePaths.gene(id)), 'utf8');

/** How many of these objects the bucket has, by HEAD (s3rver's listings can skip keys at page
 * boundaries; HEAD is exact). */
async function presentObjects(objects: Iterable<string>, prefix = ''): Promise<number> {
  const shas = [...objects];
  let present = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < shas.length) {
        const key = prefix + objectKey(shas[next++]);
        if (
          await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(
            () => true,
            () => false,
          )
        )
          present++;
      }
    }),
  );
  return present;
}

/** An S3 client that records the name of every command it sends. */
function recording(commands: string[]): S3Client {
  return new Proxy(s3, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return (command: { constructor: { name: string } }) => {
        commands.push(command.constructor.name);
        return target.send(command as never);
      };
    },
  });
}

const currentRelease = async (handler: ReturnType<typeof createHandler>) =>
  ((await (await handler(new Request('http://atlas.test/api/v1/release'))).json()) as { release: string }).release;

/** The real CloudFront client, sending to a local stand-in. */
const cloudFrontAt = (endpoint: string) => new CloudFrontClient({ region: 'us-east-1', endpoint });

/** The isoatlas command as users run it: its exit code and what it wrote. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(__dirname, '../bin/isoatlas.mjs'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-publish-'));
  server = await startS3rver([BUCKET]);
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  s3 = s3Client({ endpoint: server.endpoint, region: 'us-east-1' });
  release1 = await smallRelease();
  release2 = await deriveRelease('2026.12-test', changedGenes);
  release3 = await deriveRelease('2027.01-test', changedGenes.slice(0, 1));
  release4a = await deriveRelease('2027.02-a', changedGenes.slice(1, 2));
  release4b = await deriveRelease('2027.02-b', changedGenes.slice(2, 3));
});

afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

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
    const commands: string[] = [];
    const s = await publish({ dir: release2, bucket: BUCKET, s3: recording(commands), progress: false });
    publishing = false;
    await reading;
    const deadline = Date.now() + 5_000;
    while (seen.new === 0 && Date.now() < deadline) {
      const body = await (await reader(new Request('http://atlas.test/api/v1/genes/PRR5'))).text();
      if (body === newGene) seen.new++;
      else await new Promise((r) => setTimeout(r, 100));
    }
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
    expect(commands.filter((c) => c === 'PutObjectCommand')).toHaveLength(s.uploaded + 3 + 2 + s.packs);
    // What the store holds is known from release 1's manifest: no copies, no HEAD per object, no listing.
    expect(commands.filter((c) => /Copy|Head|List/.test(c))).toEqual([]);
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
    // A client whose object uploads fail after the first one once the release is pending: the
    // publish of release 3 dies part-way through its files (it adds two: a gene and release.json).
    let writes = 0;
    let pending = false;
    const flaky = new Proxy(s3, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return async (command: { constructor: { name: string }; input: { Key?: string } }) => {
          if (command.constructor.name === 'PutObjectCommand' && command.input.Key === 'releases.json') pending = true;
          if (
            command.constructor.name === 'PutObjectCommand' &&
            command.input.Key?.startsWith('objects/') &&
            pending &&
            ++writes > 1
          )
            throw Object.assign(new Error('connection reset'), { name: 'NetworkingError' });
          return target.send(command as never);
        };
      },
    });
    // The tree's files (its shards are published as deltas, not as they are in the tree).
    const objects3 = new Set(readManifest(release3).entries.map((e) => e.sha256));
    const missingBefore = objects3.size - (await presentObjects(objects3));
    expect(missingBefore).toBeGreaterThan(1);
    await expect(
      publish({ dir: release3, bucket: BUCKET, s3: flaky, progress: false, concurrency: 1 }),
    ).rejects.toThrow(/connection reset/);
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
    expect(resumed.packs).toBe(1);
    const published3 = await referencedOf(release3);
    expect(await presentObjects(published3)).toBe(published3.size);
    expect(await (await handler(new Request('http://atlas.test/api/v1/genes/PRR5'))).text()).toBe(
      gene(release3, 'ENSG00000186654'),
    );
    expect((await listReleases({ s3, bucket: BUCKET })).pending).toEqual([]);
  });

  it('rolls back to the previous release in one pointer write, and rolling back to the current one is a no-op', async () => {
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

describe('races between publish, rollback and gc, staged with held requests (issue #30)', () => {
  // Each test has a store of its own below a prefix; the commands under test reach s3rver through a
  // proxy that holds chosen requests until the test lets them go, so no step depends on timing.
  let proxy: HoldingProxy;
  beforeAll(async () => {
    proxy = await startHoldingProxy(server.endpoint);
  });
  afterAll(() => proxy?.close());

  const through = (endpoint: string) => s3Client({ endpoint, region: 'us-east-1' });
  const pointerOf = async (prefix: string) =>
    JSON.parse(
      await (
        await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${prefix}current.json` }))
      ).Body!.transformToString(),
    );
  const historyOf = async (prefix: string) =>
    JSON.parse(
      await (
        await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${prefix}releases.json` }))
      ).Body!.transformToString(),
    );
  /** The current release is whole: a mirror of it into an empty directory syncs, and serves it. */
  async function mirrorsWhole(prefix: string, release: string, tree: string) {
    const { mirror } = await import('../edge/mirror/mirror.js');
    const to = mkdtempSync(join(dir, 'race-mirror-'));
    const s = await mirror({
      from: `s3://${BUCKET}/${prefix}`,
      to,
      endpoint: server.endpoint,
      region: 'us-east-1',
      progress: false,
    });
    expect(s.release).toBe(release);
    const handler = createHandler({ origin: new StoreOrigin(new LocalOrigin(to)) });
    expect(await (await handler(new Request('http://atlas.test/api/v1/genes/PRR5'))).text()).toBe(
      gene(tree, 'ENSG00000186654'),
    );
  }
  /** The isoatlas command, started: its process, and its exit code and output once it ends. */
  function startCli(args: string[]) {
    const child = spawn(process.execPath, [join(__dirname, '../bin/isoatlas.mjs'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stdout.resume();
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((ok) =>
      child.on('exit', (code, signal) => ok({ code, signal, stderr })),
    );
    return { child, done };
  }

  it('a publish whose pointer write is held while a newer one with --keep 1 finishes loses, says so, and leaves current.json to the newer', async () => {
    const PREFIX = 'race-pointer/';
    await publish({ dir: release1, bucket: BUCKET, prefix: PREFIX, s3, progress: false });
    const held = proxy.hold((method, path) => method === 'PUT' && path === `/${BUCKET}/${PREFIX}current.json`);
    const late = startCli([
      'publish',
      '--dir',
      release2,
      '--bucket',
      BUCKET,
      '--prefix',
      PREFIX,
      '--endpoint',
      proxy.endpoint,
    ]);
    await held.held; // 2026.12-test is kept and newest, and its pointer write is on its way
    const newer = await publish({ dir: release3, bucket: BUCKET, prefix: PREFIX, s3, progress: false, keep: 1 });
    expect(newer.retired.sort()).toEqual([RELEASE1, '2026.12-test']);
    held.release();
    const r = await late.done;
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain(
      `s3://${BUCKET}/${PREFIX}current.json was not moved to 2026.12-test: while it was being published, 2027.01-test became the newest kept release`,
    );
    expect(r.stderr).toContain('2026.12-test is retired (a publish with --keep dropped it)');
    expect((await pointerOf(PREFIX)).release).toBe('2027.01-test');

    // gc below the safe grace is refused without --force, and warned about with it.
    const refused = await cli([
      'gc',
      '--bucket',
      BUCKET,
      '--prefix',
      PREFIX,
      '--endpoint',
      server.endpoint,
      '--grace-hours',
      '0',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--grace-hours 0 is shorter than the safe 24 h');
    expect(refused.stderr).toContain('add --force');
    const forced = await cli([
      'gc',
      '--bucket',
      BUCKET,
      '--prefix',
      PREFIX,
      '--endpoint',
      server.endpoint,
      '--grace-hours',
      '0',
      '--force',
    ]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stderr).toContain('warning: --grace-hours 0 is shorter than the safe 24 h (--force)');
    expect(forced.stderr).toMatch(
      new RegExp(`dropped (${RELEASE1_PATTERN}, 2026\\.12-test|2026\\.12-test, ${RELEASE1_PATTERN}) from the history`),
    );
    await mirrorsWhole(PREFIX, '2027.01-test', release3);

    // Names are forever: gc dropped 2026.12-test's entry, yet the name still means its data only.
    const other = await deriveRelease('2026.12-test', changedGenes.slice(1, 2), 'race-other-2026.12-test');
    await expect(publish({ dir: other, bucket: BUCKET, prefix: PREFIX, s3, progress: false })).rejects.toThrow(
      /release 2026\.12-test is already in .* with other content .*or was until gc collected it/,
    );
    const again = await publish({ dir: release2, bucket: BUCKET, prefix: PREFIX, s3, progress: false });
    expect(again).toMatchObject({ release: '2026.12-test', previous: '2027.01-test' });
    expect((await historyOf(PREFIX)).names).toMatchObject({
      '2026.12-test': expect.any(String),
      [RELEASE1]: expect.any(String),
      '2027.01-test': expect.any(String),
    });
    await mirrorsWhole(PREFIX, '2026.12-test', release2);
  });

  it('gc with a grace shorter than a running publish: the publish finds what gc deleted, uploads it again, and its release is whole', async () => {
    const PREFIX = 'race-gc/';
    await publish({ dir: release1, bucket: BUCKET, prefix: PREFIX, s3, progress: false });
    // Release 1's objects must be older than the publish below by more than the clock margin gc is given.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const logs: string[] = [];
    // Held: the history write that would make 2027.02-a kept (the first write adds it as pending).
    let historyWrites = 0;
    const held = proxy.hold(
      (method, path) => method === 'PUT' && path === `/${BUCKET}/${PREFIX}releases.json` && ++historyWrites === 2,
    );
    const running = publish({
      dir: release4a,
      bucket: BUCKET,
      prefix: PREFIX,
      s3: through(proxy.endpoint),
      progress: false,
      log: (l) => logs.push(l),
    });
    await held.held;
    // Meanwhile release 1 is retired, and gc with no grace at all collects it, and the running
    // publish's pending entry with it: among the deleted objects, some 2027.02-a shares with release 1.
    await publish({ dir: release3, bucket: BUCKET, prefix: PREFIX, s3, progress: false, keep: 1 });
    const gc = await collectGarbage({
      s3,
      bucket: BUCKET,
      prefix: PREFIX,
      graceHours: 0,
      force: true,
      clockSkewMs: 2_000,
    });
    expect(gc.dropped.sort()).toEqual([RELEASE1, '2027.02-a']);
    // 2027.02-a is pending, its manifest encoded against 2027.01-test (current).
    const [objects1, objects3, objects4a] = await Promise.all(
      [release1, release3, release4a].map((r) => referencedOf(r, PREFIX)),
    );
    const shared = [...objects4a].filter((sha) => objects1.has(sha) && !objects3.has(sha));
    expect(shared.length).toBeGreaterThan(0);
    expect(await presentObjects(shared, PREFIX)).toBe(0);
    expect((await historyOf(PREFIX)).gc.epoch).toBeGreaterThan(0);
    held.release();
    const s = await running;
    expect(s.release).toBe('2027.02-a');
    expect((await pointerOf(PREFIX)).release).toBe('2027.02-a');
    const whole4a = await referencedOf(release4a, PREFIX);
    expect(await presentObjects(whole4a, PREFIX)).toBe(whole4a.size);
    await mirrorsWhole(PREFIX, '2027.02-a', release4a);
    expect((await historyOf(PREFIX)).pending).toEqual([]);
    expect(logs.join('\n')).toContain(`gc ran on s3://${BUCKET}/${PREFIX} while release 2027.02-a was being published`);
  });

  it('a publish killed with half its objects uploaded leaves nothing current; run again, it uploads the rest and its release is whole', async () => {
    const PREFIX = 'race-kill/';
    const total = objectsOf(release1).size;
    let objectPuts = 0;
    const held = proxy.hold(
      (method, path) => method === 'PUT' && path.startsWith(`/${BUCKET}/${PREFIX}objects/`) && ++objectPuts > total / 2,
    );
    const run = startCli([
      'publish',
      '--dir',
      release1,
      '--bucket',
      BUCKET,
      '--prefix',
      PREFIX,
      '--endpoint',
      proxy.endpoint,
    ]);
    await held.held;
    run.child.kill('SIGKILL');
    expect((await run.done).signal).toBe('SIGKILL');
    held.drop();
    await proxy.idle();
    const reached = proxy.forwarded.filter(
      (f) => f.method === 'PUT' && f.path.startsWith(`/${BUCKET}/${PREFIX}objects/`),
    ).length;
    expect(reached).toBeGreaterThanOrEqual(Math.floor(total / 2));
    expect(reached).toBeLessThan(total);
    await expect(
      s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}current.json` })),
    ).rejects.toMatchObject({ $metadata: { httpStatusCode: 404 } });
    expect((await listReleases({ s3, bucket: BUCKET, prefix: PREFIX })).pending.map((p) => p.release)).toEqual([
      RELEASE1,
    ]);

    const resumed = await publish({ dir: release1, bucket: BUCKET, prefix: PREFIX, s3, progress: false });
    // (objects/ PUTs also carry manifest.json, the pack list and the pack indexes)
    expect(resumed.uploaded).toBeLessThanOrEqual(total + (await publishedOf(release1, PREFIX)).objects.size - reached);
    expect(resumed.uploaded).toBeGreaterThan(0);
    await mirrorsWhole(PREFIX, RELEASE1, release1);
  });

  it('publish, rollback and gc refuse a server that ignores conditional writes, saying why and what to do; --unsafe-single-writer runs anyway', async () => {
    const PREFIX = 'race-unconditional/';
    const plain = await startHoldingProxy(server.endpoint, { stripConditions: true });
    try {
      const args = ['--bucket', BUCKET, '--prefix', PREFIX, '--endpoint', plain.endpoint];
      const r = await cli(['publish', '--dir', release1, ...args]);
      expect(r.code).toBe(4);
      expect(r.stderr).toContain(
        `the S3 server at ${plain.endpoint} ignores conditional writes (If-None-Match: * and If-Match on PutObject of s3://${BUCKET}/${PREFIX}conditional-write-probe succeeded`,
      );
      expect(r.stderr).toContain('publish changed nothing');
      expect(r.stderr).toContain('--unsafe-single-writer');
      expect((await listReleases({ s3, bucket: BUCKET, prefix: PREFIX })).releases).toEqual([]);
      expect((await cli(['gc', ...args])).stderr).toContain('gc changed nothing');
      const alone = await cli(['publish', '--dir', release1, ...args, '--unsafe-single-writer']);
      expect(alone.code, alone.stderr).toBe(0);
      const rb = await cli(['rollback', '--to', RELEASE1, ...args]);
      expect(rb.code).toBe(4);
      expect(rb.stderr).toContain('rollback changed nothing');
    } finally {
      await plain.close();
    }
    await mirrorsWhole(PREFIX, RELEASE1, release1);
  });
});
