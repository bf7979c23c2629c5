// Publishing against a real S3-protocol server (s3rver, started here): release 1, served through the
// edge's S3 origin; release 2 differing in a few genes uploads only what changed; readers during the
// publish always see one release; a publish killed mid-way leaves release 1 serving and resumes.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { publish, rollback, s3Client, RELEASE_CACHE_CONTROL } from '../build/publish.js';
import { createHandler } from '../edge/handler.js';
import { PointerOrigin } from '../edge/origins/pointer.js';
import { S3RawOrigin } from '../edge/origins/s3.js';
import { treePaths } from '../edge/contract/tree.js';
import { startS3rver, type S3rverProcess } from './helpers/s3rver.js';
import { readManifest, readStructureMap, rewriteTree } from './helpers/tree.js';
import Database from 'better-sqlite3';
import { copyFileSync } from 'node:fs';
import { renderTree } from '../build/render/index.js';

const BUCKET = 'atlas';
let server: S3rverProcess;
let dir: string;
let s3: S3Client;
let release2: string;
let release3: string;
const changedGenes = ['ENSG00000186654', 'ENSG00000100320', 'ENSG00000128185'];


/** A smaller but complete release for these tests (s3rver needs ~3 ms an object): the demo release
 * database cut down to ~50 genes (those below, those with structures, and the first by id), rendered
 * by the real renderer. */
async function smallRelease(): Promise<string> {
  const db = join(dir, 'small.sqlite');
  copyFileSync(inject('demoDb'), db);
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
    DELETE FROM genes WHERE gene_id NOT IN (SELECT gene_id FROM keep);`);
  d.close();
  await renderTree(db, join(dir, 'small'), { progress: false });
  return join(dir, 'small');
}
let release1: string;

/** A copy of release 1 as another release: a new release name, and a few gene records changed. */
async function deriveRelease(name: string, genes: string[]): Promise<string> {
  const out = join(dir, name);
  cpSync(release1, out, { recursive: true });
  const changed = (path: string, change: (body: Record<string, unknown>) => void) => {
    const body = JSON.parse(readFileSync(join(out, path), 'utf8'));
    change(body);
    return [path, JSON.stringify(body)];
  };
  await rewriteTree(
    out,
    Object.fromEntries([...genes.map((g) => changed(treePaths.gene(g), (b) => (b.biotype = `changed in ${name}`))), changed(treePaths.release, (r) => (r.release = name))]),
    name,
  );
  return out;
}

/** Every file of a tree as published: the manifest's entries, its shards, and manifest.json. */
const allFiles = (root: string) => {
  const { index, entries } = readManifest(root);
  return [...entries, ...index.shards, { path: treePaths.manifest, size: readFileSync(join(root, treePaths.manifest)).length, sha256: '' }];
};

const gene = (root: string, id: string) => readFileSync(join(root, treePaths.gene(id)), 'utf8');

/** Distinct keys under a prefix (s3rver's listing can repeat a key at a page boundary). */
async function listKeys(prefix: string): Promise<string[]> {
  const keys = new Set<string>();
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) keys.add(o.Key!);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return [...keys];
}

/** How many files of a release's manifest (plus the manifest) exist under its prefix, by HEAD:
 * s3rver's listings can skip or repeat keys at page boundaries, HEAD is exact. */
async function presentFiles(root: string, release: string): Promise<number> {
  const paths = allFiles(root).map((e) => e.path);
  let present = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < paths.length) {
        const key = `releases/${release}/${paths[next++]}`;
        if (await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(() => true, () => false)) present++;
      }
    }),
  );
  return present;
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
});

afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('publish to S3 (s3rver)', () => {
  let total: number;

  it('publishes release 1 with content types, cache headers and checksums, then the pointer', async () => {
    const s = await publish({ dir: release1, bucket: BUCKET, s3, progress: false });
    total = allFiles(release1).length;
    expect(s).toMatchObject({ release: '2026.11-chr22-demo', previous: null, uploaded: total, copied: 0, skipped: 0 });
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'releases/2026.11-chr22-demo/api/v1/genes/ENSG00000186654.json' }));
    expect(head.ContentType).toBe('application/json; charset=utf-8');
    expect(head.CacheControl).toBe(RELEASE_CACHE_CONTROL);
    expect(head.Metadata?.sha256).toBe(createHash('sha256').update(gene(release1, 'ENSG00000186654')).digest('hex'));
    const cif = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `releases/2026.11-chr22-demo/${Object.values(readStructureMap(release1))[0].path}` }));
    expect(cif.ContentType).toBe('chemical/x-mmcif');
    const pointer = JSON.parse(await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'current.json' }))).Body!.transformToString());
    expect(pointer).toMatchObject({ release: '2026.11-chr22-demo', prefix: 'releases/2026.11-chr22-demo/', previous: null });
  });

  it('is served by the edge function through its S3 origin', async () => {
    const handler = createHandler({ origin: new PointerOrigin(new S3RawOrigin(s3, BUCKET)) });
    const r = await handler(new Request('http://atlas.test/api/v1/genes/prr5'));
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(gene(release1, 'ENSG00000186654'));
    const [id] = Object.keys(readStructureMap(release1));
    const redirect = await handler(new Request(`http://atlas.test/api/v1/isoforms/${id}/structure`));
    // Root-relative, into the release's prefix: the CDN serves releases/* from the bucket.
    expect(redirect.headers.get('Location')).toBe(`/releases/2026.11-chr22-demo/structures/${id}.cif`);
  });

  it('uploads only what changed for release 2, while readers see exactly one release per response', async () => {
    const reader = createHandler({ origin: new PointerOrigin(new S3RawOrigin(s3, BUCKET), 0) }); // re-read the pointer every time
    const oldGene = gene(release1, 'ENSG00000186654');
    const newGene = gene(release2, 'ENSG00000186654');
    let publishing = true;
    const seen = { old: 0, new: 0, other: [] as string[] };
    const reading = (async () => {
      while (publishing) {
        const [g, rel] = await Promise.all([
          reader(new Request('http://atlas.test/api/v1/genes/PRR5')),
          reader(new Request('http://atlas.test/api/v1/release')),
        ]);
        const body = await g.text();
        const release = ((await rel.json()) as { release: string }).release;
        if (g.status !== 200) seen.other.push(`gene ${g.status}`);
        else if (body === oldGene && release === '2026.11-chr22-demo') seen.old++;
        else if (body === newGene && release === '2026.12-test') seen.new++;
        else if (body !== oldGene && body !== newGene) seen.other.push('a gene body of neither release');
        // (a gene and a /release fetched concurrently may straddle the switch; each alone is whole)
      }
    })();
    const s = await publish({ dir: release2, bucket: BUCKET, s3, progress: false });
    publishing = false;
    await reading;
    // Once the pointer is written, every reader reaches the new release within the pointer's retry
    // time (a read that hit the pointer mid-write keeps the old release for up to a second).
    const deadline = Date.now() + 5_000;
    while (seen.new === 0 && Date.now() < deadline) {
      const body = await (await reader(new Request('http://atlas.test/api/v1/genes/PRR5'))).text();
      if (body === newGene) seen.new++;
      else await new Promise((r) => setTimeout(r, 100));
    }
    // 3 genes + release.json changed, so did the manifest shards listing them and manifest.json;
    // everything else is copied inside the bucket.
    const shards1 = new Set(readManifest(release1).index.shards.map((e) => e.sha256));
    const changedShards = readManifest(release2).index.shards.filter((e) => !shards1.has(e.sha256));
    expect(changedShards.length).toBeGreaterThanOrEqual(1);
    const changed = 4 + changedShards.length + 1;
    expect(s).toMatchObject({ release: '2026.12-test', previous: '2026.11-chr22-demo', uploaded: changed, skipped: 0, copied: total - changed });
    // The bytes are mostly the manifest (it lists every file); the records themselves are tiny.
    const manifestBytes = readFileSync(join(release2, treePaths.manifest)).length + changedShards.reduce((n, e) => n + e.size, 0);
    expect(s.bytesUploaded).toBeLessThan(manifestBytes + 20_000);
    expect(seen.other).toEqual([]);
    expect(seen.old).toBeGreaterThan(0);
    expect(seen.new).toBeGreaterThan(0);
  });

  it('leaves the current release serving when a publish dies mid-way, and a re-run resumes', async () => {
    // A client that fails after 40 writes: the publish of release 3 dies part-way.
    let writes = 0;
    const flaky = new Proxy(s3, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return async (command: { constructor: { name: string } }) => {
          if (/Put|Copy/.test(command.constructor.name) && ++writes > 40) throw Object.assign(new Error('connection reset'), { name: 'NetworkingError' });
          return target.send(command as never);
        };
      },
    });
    await expect(publish({ dir: release3, bucket: BUCKET, s3: flaky, progress: false, concurrency: 4 })).rejects.toThrow(/connection reset/);
    const handler = createHandler({ origin: new PointerOrigin(new S3RawOrigin(s3, BUCKET), 0) });
    const release = (await (await handler(new Request('http://atlas.test/api/v1/release'))).json()) as { release: string };
    expect(release.release).toBe('2026.12-test'); // the pointer never moved
    const partial = await presentFiles(release3, '2027.01-test');
    expect(partial).toBeGreaterThanOrEqual(40);
    expect(partial).toBeLessThan(total);

    const resumed = await publish({ dir: release3, bucket: BUCKET, s3, progress: false });
    expect(resumed.skipped).toBeGreaterThanOrEqual(40); // what the dead run wrote is not written again
    expect(resumed.skipped + resumed.copied + resumed.uploaded).toBe(total);
    expect(await presentFiles(release3, '2027.01-test')).toBe(total);
    const body = await (await handler(new Request('http://atlas.test/api/v1/genes/PRR5'))).text();
    expect(body).toBe(gene(release3, 'ENSG00000186654'));
  });

  it('rolls back to the previous release in one pointer write', async () => {
    const r = await rollback({ s3, bucket: BUCKET });
    expect(r).toEqual({ from: '2027.01-test', to: '2026.12-test' });
    const handler = createHandler({ origin: new PointerOrigin(new S3RawOrigin(s3, BUCKET), 0) });
    const release = (await (await handler(new Request('http://atlas.test/api/v1/release'))).json()) as { release: string };
    expect(release.release).toBe('2026.12-test');
  });

  it('prunes all but the newest --keep releases and invalidates the unversioned paths', async () => {
    const sent: unknown[] = [];
    const s = await publish({ dir: release3, bucket: BUCKET, s3, progress: false, keep: 2, distributionId: 'E123EXAMPLE', cloudfront: { send: async (c: unknown) => void sent.push(c) } as never });
    expect(s.release).toBe('2027.01-test');
    expect(s.pruned).toEqual(['2026.11-chr22-demo']);
    expect(await listKeys('releases/2026.11-chr22-demo/')).toEqual([]);
    expect(await presentFiles(release1, '2026.11-chr22-demo')).toBe(0);
    expect(await presentFiles(release2, '2026.12-test')).toBe(total);
    expect(s.invalidated).toEqual(['/api/v1/*', '/current.json']);
    expect((sent[0] as { input: { DistributionId: string } }).input.DistributionId).toBe('E123EXAMPLE');
  });
});

describe('mirror from s3://', () => {
  it('copies the current release of the bucket into a directory the server can serve', async () => {
    const { mirror } = await import('../build/mirror.js');
    const to = join(dir, 'mirror-from-s3');
    const s = await mirror({ from: `s3://${BUCKET}`, to, endpoint: server.endpoint, region: 'us-east-1', progress: false });
    expect(s.release).toBe('2027.01-test');
    const manifest = readManifest(to);
    expect(s.fetched).toBe(manifest.entries.length);
    for (const e of manifest.entries) expect(createHash('sha256').update(readFileSync(join(to, e.path))).digest('hex'), e.path).toBe(e.sha256);
    expect(gene(to, 'ENSG00000186654')).toBe(gene(release3, 'ENSG00000186654'));
  });
});

describe('the release pointer', () => {
  it('keeps serving the pinned release when re-reading the pointer fails, and fails only without one', async () => {
    const { PointerOrigin } = await import('../edge/origins/pointer.js');
    let broken = false;
    let now = 0;
    const raw = new S3RawOrigin(s3, BUCKET);
    const flaky = { description: 'flaky', read: (path: string) => (broken && path === 'current.json' ? Promise.resolve({ body: new TextEncoder().encode('{"trunc') }) : raw.read(path)) };
    const origin = new PointerOrigin(flaky, 10, () => now);
    const first = await origin.pin();
    broken = true;
    now = 100; // past the pointer's TTL: it is read again, and the read fails
    expect((await origin.pin()).release).toBe(first.release);
    await expect(new PointerOrigin(flaky).pin()).rejects.toThrow(/not an isoatlas release pointer|JSON/);
  });
});
