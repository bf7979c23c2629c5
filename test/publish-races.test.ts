// Races between publish, rollback and gc (issue #30), staged step by step through a proxy that holds
// chosen requests: a publish overtaken while its pointer write is held, gc deleting under a running
// publish, a publish killed half-way, a server that ignores conditional writes. Against a real
// S3-protocol server of this file's own (helpers/publish-setup.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { listReleases, publish, s3Client } from '../build/publish/publish.js';
import { collectGarbage } from '../build/publish/collect.js';
import { createHandler } from '../edge/handler.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { spawn } from 'node:child_process';
import { startHoldingProxy, type HoldingProxy } from './helpers/holding-proxy.js';
import { startS3rver } from './helpers/s3rver.js';
import {
  BUCKET,
  RELEASE1,
  RELEASE1_PATTERN,
  changedGenes,
  usePublishStore,
  server,
  s3,
  dir,
} from './helpers/publish-setup.js';
import { release1, release2, release3, release4a, deriveRelease, gene } from './helpers/publish-setup.js';
import { objectsOf, publishedOf, referencedOf, presentObjects, cli } from './helpers/publish-setup.js';
import { readManifest } from './helpers/tree.js';

usePublishStore(startS3rver);

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
  /** How far gc is told a publisher's clock may be from S3's (tests on one machine make it small). */
  const CLOCK_MARGIN_MS = 2_000;
  /** Resolves once S3 dates the object at `key` (its Last-Modified) more than `ms` ago. */
  async function olderThan(key: string, ms: number) {
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
    const until = head.LastModified!.getTime() + ms;
    while (Date.now() <= until) await new Promise((resolve) => setTimeout(resolve, until - Date.now() + 1));
  }
  /** gc with no grace at all (forced), told the clock margin of these tests. */
  const gcWithoutGrace = (prefix: string) =>
    collectGarbage({ s3, bucket: BUCKET, prefix, graceHours: 0, force: true, clockSkewMs: CLOCK_MARGIN_MS });
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
  /** `isoatlas publish` of a tree to a prefix of the bucket, through an endpoint, started. */
  const startPublish = (tree: string, prefix: string, endpoint: string) =>
    startCli(['publish', '--dir', tree, '--bucket', BUCKET, '--prefix', prefix, '--endpoint', endpoint]);

  it('a publish whose pointer write is held while a newer one with --keep 1 finishes loses, says so, and leaves current.json to the newer', async () => {
    const PREFIX = 'race-pointer/';
    await publish({ dir: release1, bucket: BUCKET, prefix: PREFIX, s3, progress: false });
    const held = proxy.hold((method, path) => method === 'PUT' && path === `/${BUCKET}/${PREFIX}current.json`);
    const late = startPublish(release2, PREFIX, proxy.endpoint);
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
    const gc = ['gc', '--bucket', BUCKET, '--prefix', PREFIX, '--endpoint', server.endpoint, '--grace-hours', '0'];
    const refused = await cli(gc);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--grace-hours 0 is shorter than the safe 24 h');
    expect(refused.stderr).toContain('add --force');
    const forced = await cli([...gc, '--force']);
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
    // Release 1's objects must be older than the publish below by more than the clock margin gc is
    // given: S3 dates none of them later than the pointer written after them, so the wait ends once
    // the pointer's Last-Modified is that margin behind (a second or two: S3 dates to the second).
    await olderThan(`${PREFIX}current.json`, CLOCK_MARGIN_MS);
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
    const gc = await gcWithoutGrace(PREFIX);
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
    const run = startPublish(release1, PREFIX, proxy.endpoint);
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
    // Exactly what the killed run did not store: the release's objects (objects/ PUTs also carry
    // manifest.json, the pack list and the pack indexes) less those that reached the server. (The
    // bound here was total + that, which a re-run uploading everything again also met.)
    expect(resumed.uploaded).toBe((await publishedOf(release1, PREFIX)).objects.size - reached);
    expect(resumed.uploaded).toBeGreaterThan(0);
    await mirrorsWhole(PREFIX, RELEASE1, release1);
  });

  /** publish() of a tree to a prefix, through the proxy. */
  const publishThrough = (tree: string, prefix: string, o: { concurrency?: number } = {}) =>
    publish({ dir: tree, bucket: BUCKET, prefix, s3: through(proxy.endpoint), progress: false, ...o });
  /** Object PUTs into a prefix that reached the server and were stored, from `from` on. */
  const storedPuts = (prefix: string, from: number) =>
    proxy.forwarded
      .slice(from)
      .filter((f) => f.method === 'PUT' && f.status === 200 && f.path.startsWith(`/${BUCKET}/${prefix}objects/`))
      .map((f) => f.path);
  const uploadsFrom = (prefix: string, from: number) =>
    proxy.forwarded
      .slice(from)
      .filter((f) => f.method === 'PUT' && /^(objects|packs)\//.test(f.path.slice(`/${BUCKET}/${prefix}`.length)));
  /** A server that answers 500 to every object PUT into `prefix` once a release is pending there and
   * `after` more have gone through. Returns what ends it. */
  const failObjectsOncePending = (prefix: string, after: number) => {
    let pending = false;
    let passed = 0;
    return proxy.fail((method, path) => {
      if (method === 'PUT' && path === `/${BUCKET}/${prefix}releases.json`) pending = true;
      return method === 'PUT' && path.startsWith(`/${BUCKET}/${prefix}objects/`) && pending && ++passed > after;
    });
  };

  it('re-publishing a release --keep retired sends none of its objects or packs the store still holds', async () => {
    const PREFIX = 'race-retired/';
    await publish({ dir: release1, bucket: BUCKET, prefix: PREFIX, s3, progress: false });
    await publish({ dir: release2, bucket: BUCKET, prefix: PREFIX, s3, progress: false, keep: 1 });
    expect((await historyOf(PREFIX)).retired.map((r: { release: string }) => r.release)).toEqual([RELEASE1]);
    // Release 1 has objects release 2 does not list (the genes release 2 changed): still stored.
    const listed2 = objectsOf(release2);
    const only1 = [...(await referencedOf(release1, PREFIX))].filter((sha) => !listed2.has(sha));
    expect(only1.length).toBeGreaterThan(0);
    expect(await presentObjects(only1, PREFIX)).toBe(only1.length);
    const from = proxy.forwarded.length;
    const again = await publishThrough(release1, PREFIX);
    expect(again).toMatchObject({ release: RELEASE1, previous: '2026.12-test', uploaded: 0, packs: 0 });
    expect(uploadsFrom(PREFIX, from)).toEqual([]);
    await mirrorsWhole(PREFIX, RELEASE1, release1);
  });

  it('after gc dropped the pending entry of an interrupted publish, publishing it again sends none of what that run stored', async () => {
    const PREFIX = 'race-dropped/';
    await publish({ dir: release1, bucket: BUCKET, prefix: PREFIX, s3, progress: false });
    // Release 2's publish stops part-way: its manifest and two of its files went up.
    const failing = failObjectsOncePending(PREFIX, 2);
    const from = proxy.forwarded.length;
    await expect(publishThrough(release2, PREFIX, { concurrency: 1 })).rejects.toMatchObject({
      name: 'InternalError',
      $metadata: { httpStatusCode: 500 },
    });
    failing();
    const stored = storedPuts(PREFIX, from);
    expect(stored.length).toBeGreaterThan(2);
    // gc with no grace drops the abandoned pending entry; what the run stored, younger than its start, stays.
    const gc = await gcWithoutGrace(PREFIX);
    expect(gc.dropped).toEqual(['2026.12-test']);
    expect((await historyOf(PREFIX)).pending).toEqual([]);
    const shaOf = (path: string) => path.slice(`/${BUCKET}/${PREFIX}objects/`.length).replace('/', '');
    expect(await presentObjects(stored.map(shaOf), PREFIX)).toBe(stored.length);
    const from2 = proxy.forwarded.length;
    const again = await publishThrough(release2, PREFIX);
    expect(again.uploaded).toBeGreaterThan(0);
    expect(uploadsFrom(PREFIX, from2).filter((f) => stored.includes(f.path))).toEqual([]);
    await mirrorsWhole(PREFIX, '2026.12-test', release2);
  });

  it('a server answering errors mid-way: 503 SlowDown is tried again; persistent 500s stop publish (exit 4) naming the key and endpoint, and a re-run sends only what is missing', async () => {
    const PREFIX = 'race-errors/';
    // Every third object PUT is answered 503 SlowDown, once: tried again, it goes through.
    const slowed = new Set<string>();
    let puts = 0;
    const slow = proxy.fail(
      (method, path) =>
        method === 'PUT' &&
        path.startsWith(`/${BUCKET}/${PREFIX}objects/`) &&
        ++puts % 3 === 0 &&
        !slowed.has(path) &&
        slowed.add(path).size > 0,
      503,
      'SlowDown',
    );
    const first = await publishThrough(release1, PREFIX);
    slow();
    expect(slowed.size).toBeGreaterThan(0);
    expect(first.uploaded).toBe((await referencedOf(release1, PREFIX)).size);
    await mirrorsWhole(PREFIX, RELEASE1, release1);

    // Then every object PUT fails once release 2 is pending: the command stops and says where.
    const failing = failObjectsOncePending(PREFIX, 0);
    const from = proxy.forwarded.length;
    const r = await startCli([
      'publish',
      '--dir',
      release2,
      '--bucket',
      BUCKET,
      '--prefix',
      PREFIX,
      '--endpoint',
      proxy.endpoint,
      '--log-level',
      'debug',
    ]).done;
    failing();
    expect(r.code, r.stderr).toBe(4);
    // `--log-level debug` says how long each phase took, up to where it stopped.
    for (const phase of ['tree', 'history', 'hash', 'probe', 'manifest'])
      expect(r.stderr).toMatch(new RegExp(`debug: publish phase ${phase}: \\d+\\.\\d\\d s`));
    expect(r.stderr).toMatch(
      new RegExp(
        `PutObjectCommand s3://${BUCKET}/${PREFIX}objects/[0-9a-f]{2}/[0-9a-f]{62} at ${proxy.endpoint} failed: the server answered 500 InternalError`,
      ),
    );
    expect((await historyOf(PREFIX)).pending.map((p: { release: string }) => p.release)).toEqual(['2026.12-test']);
    const stored = storedPuts(PREFIX, from);
    const files2 = new Set(readManifest(release2).entries.map((e) => e.sha256));
    const missingFiles = files2.size - (await presentObjects(files2, PREFIX));
    expect(missingFiles).toBeGreaterThan(0);
    const from2 = proxy.forwarded.length;
    const resumed = await publishThrough(release2, PREFIX);
    // The manifest went up before the failure: only the files are sent, each once.
    expect(resumed.uploaded).toBe(missingFiles);
    expect(uploadsFrom(PREFIX, from2).filter((f) => stored.includes(f.path))).toEqual([]);
    await mirrorsWhole(PREFIX, '2026.12-test', release2);
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
      expect(rb.code, rb.stderr).toBe(4);
      expect(rb.stderr).toContain('rollback changed nothing');
    } finally {
      await plain.close();
    }
    await mirrorsWhole(PREFIX, RELEASE1, release1);
  });
});
