// The setting the publish tests share (test/publish.test.ts, publish-kvs.test.ts, publish-races.test.ts):
// each file starts an S3 server of its own (s3rver in a child process, with S3's conditional writes:
// s3rver.ts), so the files run side by side, and builds a small release 1 from the fixture release,
// with releases 2, 3, 4a and 4b derived from it, which its tests publish to stores of their own in
// the bucket. Also what those files read the bucket and the trees with. The bindings below are set
// by the hooks usePublishStore() registers, before the file's first test.
import { afterAll, beforeAll, inject } from 'vitest';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import Database from 'better-sqlite3';
import { s3Client } from '../../build/publish/publish.js';
import { loadManifest } from '../../build/common/manifest-reader.js';
import { renderTree } from '../../build/render/index.js';
import { HISTORY_KEY, objectKey, parseHistory } from '../../edge/contract/store-layout.js';
import { treePaths } from '../../edge/contract/tree.js';
import { parsePackList } from '../../edge/contract/packs.js';
import { S3RawOrigin } from '../../edge/origins/s3.js';
import type { startS3rver, S3rverProcess } from './s3rver.js';
import { literally, readManifest, rewriteTree } from './tree.js';
import { fixtureGenes } from './fixture-release.js';
import { dropRecords } from './release-edit.js';

/** The first release these tests publish: the fixture's, cut down. */
export const RELEASE1 = fixtureGenes().release;
export const RELEASE1_PATTERN = literally(RELEASE1);

export const BUCKET = 'atlas';
/** The genes the derived releases change (release 2 all three, 3, 4a and 4b one each). */
export const changedGenes = ['ENSG00000186654', 'ENSG00000100320', 'ENSG00000128185'];

const ISOATLAS = fileURLToPath(new URL('../../bin/isoatlas.mjs', import.meta.url));

export let server: S3rverProcess;
/** This file's scratch directory: the trees, and whatever its tests write. */
export let dir: string;
export let s3: S3Client;
export let release1: string;
export let release2: string;
export let release3: string;
export let release4a: string;
export let release4b: string;

/** Starts the file's S3 server and builds its releases before its first test; stops and removes them
 * after its last. The file passes the server's starter (helpers/s3rver.ts), so its own imports say
 * that it runs one (the quick tier is chosen by them: vitest.config.ts). */
export function usePublishStore(start: typeof startS3rver): void {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'isoatlas-publish-'));
    // The server starts in its own process while release 1 renders in this one.
    [server, release1] = await Promise.all([start([BUCKET]), smallRelease()]);
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    s3 = s3Client({ endpoint: server.endpoint, region: 'us-east-1' });
    release2 = await deriveRelease('2026.12-test', changedGenes);
    release3 = await deriveRelease('2027.01-test', changedGenes.slice(0, 1));
    release4a = await deriveRelease('2027.02-a', changedGenes.slice(1, 2));
    release4b = await deriveRelease('2027.02-b', changedGenes.slice(2, 3));
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
}

/** A small but complete release for these tests (s3rver takes milliseconds an object, and the tests
 * publish, mirror and collect it whole over and over): the fixture release's database cut down to
 * the genes changedGenes lists (reference and long-read isoforms, structures among them), the first
 * other gene by id (one that no derived release changes), and the gene of a structure should none of
 * those have one; rendered by the real renderer. */
async function smallRelease(): Promise<string> {
  const db = join(dir, 'small.sqlite');
  copyFileSync(inject('fixtureDb'), db);
  const d = new Database(db);
  const changed = changedGenes.map((g) => `'${g}'`).join(',');
  d.exec(`
    CREATE TEMP TABLE keep AS
      SELECT gene_id FROM genes WHERE gene_id IN (${changed})
      UNION SELECT gene_id FROM (SELECT gene_id FROM genes WHERE gene_id NOT IN (${changed}) ORDER BY gene_id LIMIT 1)
      UNION SELECT gene_id FROM (
        SELECT i.gene_id FROM structures s JOIN isoforms i USING (transcript_id)
        ORDER BY i.gene_id IN (${changed}) DESC, s.transcript_id LIMIT 1);`);
  const others = d.prepare('SELECT gene_id FROM genes WHERE gene_id NOT IN (SELECT gene_id FROM keep)').pluck();
  dropRecords(d, { genes: others.all() as string[] });
  d.close();
  await renderTree(db, join(dir, 'small'), { progress: false });
  return join(dir, 'small');
}

/** A copy of release 1 as another release: a new release name, and a few gene records changed. */
export async function deriveRelease(name: string, genes: string[], dirName = name): Promise<string> {
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
export function objectsOf(root: string): Set<string> {
  const { index, entries } = readManifest(root);
  return new Set([...entries.map((e) => e.sha256), ...index.shards.map((s) => s.sha256)]);
}

/** The objects a tree's release consists of in the bucket: its files; the manifest publish wrote for
 * it (encoded against the release current then, so not the tree's own) with every shard object it
 * references; the pack list it names and the pack indexes that list names. Also its packs. A release
 * the bucket does not hold (yet, or any more) is its tree's objects. */
export async function publishedOf(
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
export const referencedOf = async (root: string, prefix = '') => (await publishedOf(root, prefix)).objects;

export const gene = (root: string, id: string) => readFileSync(join(root, treePaths.gene(id)), 'utf8');

/** How many of these objects the bucket has, by HEAD (s3rver's listings can skip keys at page
 * boundaries; HEAD is exact). */
export async function presentObjects(objects: Iterable<string>, prefix = ''): Promise<number> {
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
export function recording(commands: string[]): S3Client {
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

/** The isoatlas command as users run it: its exit code and what it wrote. */
export function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [ISOATLAS, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
