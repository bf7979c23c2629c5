// `isoatlas mirror` against a real static HTTP server holding the demo tree: a complete first sync,
// no-change and incremental syncs (counted origin requests), local corruption, a corrupted download,
// a sync killed mid-way and resumed, a published store (pointer, history, objects), a busy source, a
// chained mirror of a running server, and the CLI.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LocalHttpServer } from './helpers/local-http-server.js';
import fg from 'fast-glob';
import type http from 'node:http';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { mirror, parseMirrorSource, type MirrorRecord } from '../edge/mirror/mirror.js';
import { SWEPT_MARK } from '../edge/mirror/clean-up-due.js';
import { writeManifest } from '../build/render/manifest.js';
import { treePaths, type ManifestEntry } from '../edge/contract/tree.js';
import { objectKey } from '../edge/contract/store-layout.js';
import { DEFAULT_GRACE_HOURS } from '../build/publish/grace.js';
import { readAliases, readManifest as readShardedManifest } from './helpers/tree.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { RELEASE_HEADER } from '../edge/contract/routes.js';
import { withoutRelease } from './helpers/pinned.js';
import { linkObjects } from './helpers/mirror-seed.js';

const ROOT = join(__dirname, '..');

interface Manifest {
  release: string;
  entries: ManifestEntry[];
  /** The manifest's own shard files, as manifest.json lists them. */
  shards: ManifestEntry[];
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
function readManifest(dir: string): Manifest {
  const { index, entries } = readShardedManifest(dir);
  return { release: index.release, entries, shards: index.shards };
}
/** The manifest shards of `to` that `from` does not have byte for byte: what a sync downloads. */
const _newShards = (from: Manifest, to: Manifest) => to.shards.filter((s, i) => from.shards[i]?.sha256 !== s.sha256);
const _sizeOf = (entries: ManifestEntry[]) => entries.reduce((sum, e) => sum + e.size, 0);

/** A static file server over a stack of directories (the first holding a path wins), counting
 * requests per path; paths can be made to fail (500), hang (never answered) or serve a wrong body. */
class StaticOrigin extends LocalHttpServer {
  roots: string[] = [];
  readonly requests = new Map<string, number>();
  readonly statuses = new Map<string, number[]>();
  /** Paths whose 200 answer was completely handed to the network. */
  readonly served = new Set<string>();
  readonly fail = new Set<string>();
  readonly hang = new Map<string, () => void>();
  readonly corrupt = new Map<string, Buffer>();
  /** Paths answered 429 with Retry-After: 1 this many more times. */
  readonly busy = new Map<string, number>();
  reset() {
    this.requests.clear();
    this.statuses.clear();
    this.served.clear();
  }

  /** Every requested path with its count, sorted: compact to assert on. */
  requested(): Record<string, number> {
    return Object.fromEntries([...this.requests].sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  total(): number {
    return [...this.requests.values()].reduce((a, b) => a + b, 0);
  }

  protected async answer(req: http.IncomingMessage, res: http.ServerResponse) {
    const path = normalize(decodeURIComponent(new URL(req.url!, 'http://x').pathname)).replace(/^\/+/, '');
    this.requests.set(path, (this.requests.get(path) ?? 0) + 1);
    const reply = (status: number, body?: Buffer) => {
      this.statuses.set(path, [...(this.statuses.get(path) ?? []), status]);
      if (status === 200) res.once('finish', () => this.served.add(path));
      res.writeHead(status).end(body);
    };
    if (path.startsWith('..')) return reply(404);
    const onHang = this.hang.get(path);
    if (onHang) return onHang(); // never answered
    if (this.fail.has(path)) return reply(500);
    const busyFor = this.busy.get(path) ?? 0;
    if (busyFor > 0) {
      this.busy.set(path, busyFor - 1);
      this.statuses.set(path, [...(this.statuses.get(path) ?? []), 429]);
      return res.writeHead(429, { 'Retry-After': '1' }).end();
    }
    const junk = this.corrupt.get(path);
    if (junk) return reply(200, junk);
    for (const root of this.roots) {
      try {
        return reply(200, await readFile(join(root, path)));
      } catch {
        // next root
      }
    }
    reply(404);
  }
}

/** The distinct objects a release is mirrored as: its files', its manifest shards' and its manifest's sha256. */
function objectsOf(m: Manifest, manifestBytes: Buffer): Map<string, number> {
  const out = new Map<string, number>([[sha256(manifestBytes), manifestBytes.length]]);
  for (const e of [...m.shards, ...m.entries]) out.set(e.sha256, e.size);
  return out;
}

/** Objects of `dir` that are missing or do not hash to their name, and objects no release needs. */
function verifyStore(
  dir: string,
  ...releases: Map<string, number>[]
): { wrong: string[]; missing: string[]; extra: string[] } {
  const needed = new Map(releases.flatMap((r) => [...r]));
  const wrong: string[] = [];
  const missing: string[] = [];
  for (const sha of needed.keys()) {
    const file = join(dir, objectKey(sha));
    if (!existsSync(file)) missing.push(sha);
    else if (sha256(readFileSync(file)) !== sha) wrong.push(sha);
  }
  const extra = fg
    .sync('objects/**', { cwd: dir })
    .map((p) => p.slice('objects/'.length).replace('/', ''))
    .filter((sha) => !needed.has(sha));
  return { wrong, missing, extra };
}
const whole = { wrong: [], missing: [], extra: [] };
const retired = (dir: string) =>
  (JSON.parse(readFileSync(join(dir, 'releases.json'), 'utf8')) as { retired: { release: string }[] }).retired.map(
    (r) => r.release,
  );
const held = (dir: string) =>
  (JSON.parse(readFileSync(join(dir, 'releases.json'), 'utf8')) as { releases: { release: string }[] }).releases.map(
    (r) => r.release,
  );

function runCli(
  args: string[],
  onSpawn?: (kill: () => void) => void,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdout!.resume();
  onSpawn?.(() => child.kill('SIGKILL'));
  return new Promise((ok) => child.once('exit', (code, signal) => ok({ code, signal, stderr })));
}

async function withServer<T>(
  dir: string,
  use: (server: RunningServer) => Promise<T>,
  extraArgs: string[] = [],
): Promise<T> {
  const server = await startServer({ dir, extraArgs });
  try {
    return await use(server);
  } finally {
    await server.stop();
  }
}

const demo = () => inject('fixtureTree');
let origin: StaticOrigin;
let work: string;
let manifestA: Manifest;
let manifestBytesA: Buffer;
let objectsA: Map<string, number>;
/** Overlay over the demo tree: three gene files rewritten and a manifest naming them. */
let treeB: string;
let manifestB: Manifest;
let objectsB: Map<string, number>;
let changed: string[];
/** A published store: current.json, releases.json, and objects/ (hard links into the demo tree). */
let published: string;
const PUBLISHED_RELEASE = '2026.11-published';
let prr5: string;
let mirrorDir: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-mirror-'));
  manifestBytesA = readFileSync(join(demo(), treePaths.manifest));
  manifestA = readManifest(demo());
  objectsA = objectsOf(manifestA, manifestBytesA);
  prr5 = readAliases(demo()).genes.prr5 as string;
  expect(prr5).toMatch(/^ENSG/);

  // Release B: three gene files reformatted (same data, different bytes).
  treeB = join(work, 'tree-b');
  const genes = manifestA.entries.filter((e) => /^api\/v1\/genes\/[^/]+\.json$/.test(e.path));
  changed = [genes[3], genes[Math.floor(genes.length / 2)], genes[genes.length - 5]].map((e) => e.path);
  const entriesB = manifestA.entries.map((e) => {
    if (!changed.includes(e.path)) return e;
    const body = Buffer.from(JSON.stringify(JSON.parse(readFileSync(join(demo(), e.path), 'utf8')), null, 1));
    mkdirSync(dirname(join(treeB, e.path)), { recursive: true });
    writeFileSync(join(treeB, e.path), body);
    return { ...e, size: body.length, sha256: sha256(body) };
  });
  await writeManifest(treeB, `${manifestA.release}-b`, entriesB);
  manifestB = readManifest(treeB);
  objectsB = objectsOf(manifestB, readFileSync(join(treeB, treePaths.manifest)));

  published = join(work, 'published');
  const manifestFile = (sha: string) => ({ sha256: sha, path: treePaths.manifest });
  linkObjects(published, [demo()], [manifestFile(sha256(manifestBytesA)), ...manifestA.shards, ...manifestA.entries]);
  // A corrupted store: the object named by a sha256 of zeros holds the manifest's bytes.
  linkObjects(published, [demo()], [manifestFile('0'.repeat(64))]);

  mirrorDir = join(work, 'mirror');
  origin = new StaticOrigin();
  await origin.start();
});

afterAll(async () => {
  await origin?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

function writePointer(manifestSha: string) {
  const release = { release: PUBLISHED_RELEASE, manifest_sha256: manifestSha, published_at: new Date().toISOString() };
  writeFileSync(join(published, 'current.json'), JSON.stringify({ format: 2, ...release, previous: null }));
  writeFileSync(
    join(published, 'releases.json'),
    JSON.stringify({ format: 2, releases: [release], pending: [], retired: [] }),
  );
}

describe('isoatlas mirror', () => {
  it('parses sources: http(s) base URLs and s3://bucket[/prefix]; anything else is a usage error', () => {
    expect(parseMirrorSource('https://cdn.example.org/atlas/')).toEqual({
      kind: 'http',
      base: 'https://cdn.example.org/atlas',
    });
    expect(parseMirrorSource('s3://bucket')).toEqual({ kind: 's3', bucket: 'bucket', prefix: '' });
    expect(parseMirrorSource('s3://bucket/atlas')).toEqual({ kind: 's3', bucket: 'bucket', prefix: 'atlas/' });
    for (const bad of ['ftp://example.org/x', 's3://', 'example.org', '/srv/tree'])
      expect(() => parseMirrorSource(bad), bad).toThrow(/expected an http\(s\) base URL or s3:/);
  });

  it('first sync of a tree root stores every object once, verified, records its source, and is served by `isoatlas serve`', async () => {
    origin.roots = [demo()];
    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    console.log(`first sync: ${s.fetched} objects, ${(s.bytes / 1e6).toFixed(1)} MB in ${s.seconds.toFixed(2)} s`);
    const bytes = [...objectsA.values()].reduce((a, b) => a + b, 0);
    expect(s).toMatchObject({
      release: manifestA.release,
      releases: [manifestA.release],
      fetched: objectsA.size,
      reused: 0,
      removed: 0,
      bytes,
    });
    expect(verifyStore(mirrorDir, objectsA)).toEqual(whole);
    // One request per distinct object (files with the same bytes are fetched once), and the probe for a pointer.
    expect(origin.requests.size).toBe(objectsA.size + 1);
    expect([...origin.requests.values()].every((n) => n === 1)).toBe(true);
    expect(origin.statuses.get('current.json')).toEqual([404]);
    const record = JSON.parse(readFileSync(join(mirrorDir, 'mirror.json'), 'utf8')) as MirrorRecord;
    expect(record).toMatchObject({ source: origin.base, current: manifestA.release, releases: [manifestA.release] });
    expect(Date.parse(record.synced_at)).toBeGreaterThan(Date.now() - 60_000);

    await withServer(mirrorDir, async (server) => {
      const res = await fetch(`${server.api}/genes/PRR5`);
      expect(res.status).toBe(200);
      expect(res.headers.get(RELEASE_HEADER)).toBe(manifestA.release);
      expect(await res.text()).toBe(readFileSync(join(demo(), treePaths.gene(prr5)), 'utf8'));
      // Structure redirects point into the release, and the server serves the file there.
      const [id] = Object.keys(JSON.parse(readFileSync(join(demo(), treePaths.structureMap(0)), 'utf8')));
      const redirect = await fetch(`${server.api}/isoforms/${id}/structure`, { redirect: 'manual' });
      expect(redirect.headers.get('location')).toBe(`/releases/${manifestA.release}/structures/${id}.cif`);
      const cif = await fetch(`${server.base}${redirect.headers.get('location')}`);
      expect(cif.status).toBe(200);
      expect(Buffer.from(await cif.arrayBuffer()).equals(readFileSync(join(demo(), treePaths.structureFile(id))))).toBe(
        true,
      );
    });
  });

  it('a second sync with nothing changed downloads only the pointer probe and manifest.json, and reads no manifest shard', async () => {
    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    // Every shard is held whole since the last sync (verified-shards.ts): only manifest.json is looked
    // at, and every object is trusted after one stat.
    expect(s).toMatchObject({
      release: manifestA.release,
      fetched: 0,
      reused: 1,
      unchanged: manifestA.shards.length,
      trusted: objectsA.size,
      hashed: 0,
      bytes: manifestBytesA.length,
    });
    expect(origin.requested()).toEqual({ 'current.json': 1, 'manifest.json': 1 });
  });

  it('detects corrupted objects in the mirror (junk, or the same size with a flipped byte) and fetches only them', async () => {
    const junked = manifestA.entries[10];
    const flipped = manifestA.entries.find((e) => e.path === treePaths.geneAliases(0))!;
    writeFileSync(join(mirrorDir, objectKey(junked.sha256)), 'junk');
    const bytes = readFileSync(join(mirrorDir, objectKey(flipped.sha256)));
    bytes[100] ^= 1;
    writeFileSync(join(mirrorDir, objectKey(flipped.sha256)), bytes);
    expect(verifyStore(mirrorDir, objectsA).wrong.sort()).toEqual([junked.sha256, flipped.sha256].sort());

    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    expect(s).toMatchObject({ fetched: 2, reused: objectsA.size - 2 });
    expect(origin.requested()).toEqual(
      Object.fromEntries(
        [
          ['current.json', 1],
          ['manifest.json', 1],
          [junked.path, 1],
          [flipped.path, 1],
        ].sort(),
      ),
    );
    expect(verifyStore(mirrorDir, objectsA)).toEqual(whole);
  });

  it('a sync to a changed release fetches exactly the new objects and keeps the previous release, both servable', async () => {
    origin.roots = [treeB, demo()];
    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    const added = [...objectsB.keys()].filter((sha) => !objectsA.has(sha));
    console.log(`incremental sync: ${s.fetched} fetched, ${s.reused} reused, ${origin.total()} requests`);
    expect(s).toMatchObject({
      release: manifestB.release,
      releases: [manifestA.release, manifestB.release],
      fetched: added.length,
      removed: 0,
    });
    expect(origin.total()).toBe(added.length + 1); // manifest.json is one of them
    expect(verifyStore(mirrorDir, objectsA, objectsB)).toEqual(whole);
    await withServer(mirrorDir, async (server) => {
      const gene = (query: string) =>
        fetch(`${server.api}/genes/${changed[0].split('/').pop()!.replace('.json', '')}${query}`).then(async (r) => ({
          release: r.headers.get(RELEASE_HEADER),
          body: await r.text(),
        }));
      expect(await gene('')).toEqual({
        release: manifestB.release,
        body: readFileSync(join(treeB, changed[0]), 'utf8'),
      });
      const pinned = await gene(`?release=${manifestA.release}`);
      expect({ ...pinned, body: withoutRelease(pinned.body, manifestA.release) }).toEqual({
        release: manifestA.release,
        body: readFileSync(join(demo(), changed[0]), 'utf8'),
      });
      const listed = (await (await fetch(`${server.api}/releases`)).json()) as {
        current: string;
        releases: { release: string }[];
      };
      expect(listed).toMatchObject({
        current: manifestB.release,
        releases: [{ release: manifestA.release }, { release: manifestB.release }],
      });
    });
  });

  it('a download whose sha256 does not match is retried once, then fails naming the path; the mirror still serves its release', async () => {
    const bad = manifestB.entries.find((e) => e.path === changed[1])!;
    // A fresh mirror of release B, so the changed file must be downloaded.
    const dir = join(work, 'mirror-bad');
    origin.corrupt.set(bad.path, Buffer.from(readFileSync(join(treeB, bad.path), 'utf8').replace(/"/g, "'")));
    origin.reset();
    try {
      await expect(mirror({ from: origin.base, to: dir, progress: false })).rejects.toThrow(
        new RegExp(
          `^${bad.path.replace(/\./g, '\\.')}: downloaded \\d+ bytes with sha256 [0-9a-f]{64}, but the manifest lists sha256 ${bad.sha256}`,
        ),
      );
    } finally {
      origin.corrupt.clear();
    }
    expect(origin.requests.get(bad.path)).toBe(2);
    expect(existsSync(join(dir, 'current.json'))).toBe(false); // never switched to a release it does not hold whole
    const s = await mirror({ from: origin.base, to: dir, progress: false });
    expect(s.reused).toBeGreaterThan(0); // what the failed run verified is kept
    expect(s.fetched + s.reused).toBe(objectsB.size);
    expect(verifyStore(dir, objectsB)).toEqual(whole);
  });

  it('waits for a source that answers 429, as long as its Retry-After says, instead of failing', async () => {
    const dir = join(work, 'mirror-busy');
    // Release A's files in place but the one the source is busy for: the sync asks for that file
    // and for manifest.json, and hashes the rest.
    const busyFile = manifestA.entries[5];
    linkObjects(dir, [demo()], manifestA.entries, new Set([busyFile.sha256]));
    const waits: number[] = [];
    origin.roots = [demo()];
    origin.busy.set(treePaths.manifest, 2);
    origin.busy.set(busyFile.path, 1);
    origin.reset();
    const s = await mirror({ from: origin.base, to: dir, progress: false, sleep: async (ms) => void waits.push(ms) });
    expect(s.waited).toBe(3);
    expect(waits).toEqual([1000, 1000, 1000]);
    expect(origin.statuses.get(treePaths.manifest)).toEqual([429, 429, 200]);
    expect(origin.statuses.get(busyFile.path)).toEqual([429, 200]);
    expect(verifyStore(dir, objectsA)).toEqual(whole);
  });

  it('mirrors a published store through its pointer, checking the manifest against manifest_sha256', async () => {
    origin.roots = [published];
    const dir = join(work, 'mirror-store');
    writePointer('0'.repeat(64));
    origin.reset();
    await expect(mirror({ from: `${origin.base}/`, to: dir, progress: false })).rejects.toThrow(
      /^manifest\.json: downloaded \d+ bytes with sha256 [0-9a-f]{64}, but the manifest lists sha256 0{64}; the source does not serve a whole isoatlas release/,
    );

    writePointer(sha256(manifestBytesA));
    origin.reset();
    const s = await mirror({ from: `${origin.base}/`, to: dir, progress: false });
    expect(s).toMatchObject({ release: PUBLISHED_RELEASE, releases: [PUBLISHED_RELEASE] });
    // Every request is for the pointer, the history or an object named by its sha256.
    expect(
      Object.keys(origin.requested()).every(
        (p) => p === 'current.json' || p === 'releases.json' || /^objects\/[0-9a-f]{2}\/[0-9a-f]{62}$/.test(p),
      ),
    ).toBe(true);
    expect(verifyStore(dir, objectsA)).toEqual(whole);
  });

  it('a mirror of a running `isoatlas serve` of another mirror (chained) is byte-identical', async () => {
    const chained = join(work, 'mirror-chained');
    // The upstream server allows its downstream mirrors more than anonymous clients get by default
    // (a sync is one request per object).
    const config = join(work, 'mirror-access.json');
    writeFileSync(config, JSON.stringify({ open: { anonymous_per_ip: { per_minute: 1_000_000 } } }));
    await withServer(
      mirrorDir,
      async (server) => {
        const s = await mirror({ from: server.base, to: chained, progress: false, releases: [manifestA.release] });
        expect(s).toMatchObject({
          release: manifestB.release,
          releases: [manifestA.release, manifestB.release],
          fetched: new Set([...objectsA.keys(), ...objectsB.keys()]).size,
          waited: 0,
        });
      },
      ['--access-config', config, '--keys-dir', join(work, 'keys')],
    );
    expect(readFileSync(join(chained, 'current.json')).equals(readFileSync(join(mirrorDir, 'current.json')))).toBe(
      true,
    );
    expect(readFileSync(join(chained, 'releases.json')).equals(readFileSync(join(mirrorDir, 'releases.json')))).toBe(
      true,
    );
    const objects = (dir: string) => fg.sync('objects/**', { cwd: dir }).sort();
    expect(objects(chained)).toEqual(objects(mirrorDir));
    for (const path of objects(chained))
      expect(readFileSync(join(chained, path)).equals(readFileSync(join(mirrorDir, path))), path).toBe(true);
  });

  it('--keep 1 retires the previous release: its objects stay for the grace period, as gc keeps them, then go; asking for an unknown release is a usage error', async () => {
    origin.roots = [treeB, demo()];
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false, keep: 1 });
    const onlyA = [...objectsA.keys()].filter((sha) => !objectsB.has(sha));
    expect(onlyA.length).toBeGreaterThan(0);
    expect(s).toMatchObject({ releases: [manifestB.release], fetched: 0, removed: 0 });
    expect(held(mirrorDir)).toEqual([manifestB.release]);
    expect(retired(mirrorDir)).toEqual([manifestA.release]);
    // A reader of the previous release (a client following a link pinned to it) still gets it whole.
    expect(verifyStore(mirrorDir, objectsA, objectsB)).toEqual(whole);
    await withServer(mirrorDir, async (server) => {
      const res = await fetch(`${server.api}/genes/PRR5?release=${manifestA.release}`);
      expect(res.status).toBe(200);
      expect(res.headers.get(RELEASE_HEADER)).toBe(manifestA.release);
    });
    // The clean-up is gc's: a minute before the grace period ends nothing goes, a minute after it
    // the retired release's objects and its entry do.
    const at = (ms: number) => () => new Date(Date.now() + ms);
    const within = await mirror({
      from: origin.base,
      to: mirrorDir,
      progress: false,
      keep: 1,
      now: at(DEFAULT_GRACE_HOURS * 3_600_000 - 60_000),
    });
    expect(within.removed).toBe(0);
    expect(verifyStore(mirrorDir, objectsA, objectsB)).toEqual(whole);
    const after = await mirror({
      from: origin.base,
      to: mirrorDir,
      progress: false,
      keep: 1,
      now: at(DEFAULT_GRACE_HOURS * 3_600_000 + 60_000),
    });
    expect(after).toMatchObject({ releases: [manifestB.release], fetched: 0, removed: onlyA.length });
    expect(verifyStore(mirrorDir, objectsB)).toEqual(whole);
    expect(retired(mirrorDir)).toEqual([]);
    await expect(mirror({ from: origin.base, to: mirrorDir, progress: false, releases: ['1999.01'] })).rejects.toThrow(
      /release 1999\.01 is not kept by/,
    );
  });

  it('the clean-up runs only when it may delete something: not after finished syncs, but after one that did not finish, or once a retired release is past its grace period', async () => {
    const dir = join(work, 'mirror-clean-up');
    origin.roots = [treeB, demo()];
    const later = () => new Date(Date.now() + DEFAULT_GRACE_HOURS * 3_600_000 + 60_000);
    const first = await mirror({ from: origin.base, to: dir, progress: false, keep: 1 });
    expect([first.swept, existsSync(join(dir, SWEPT_MARK))]).toEqual([false, true]);
    // An object no release lists, which only a sync that did not finish could have left.
    const stray = objectKey('ab'.repeat(32));
    mkdirSync(dirname(join(dir, stray)), { recursive: true });
    writeFileSync(join(dir, stray), 'left by a sync that did not finish');
    const again = await mirror({ from: origin.base, to: dir, progress: false, keep: 1, now: later });
    expect([again.swept, again.removed, existsSync(join(dir, stray))]).toEqual([false, 0, true]);
    // Without the mark (a sync that stopped removed it and never wrote it again), the next one sweeps.
    rmSync(join(dir, SWEPT_MARK));
    const swept = await mirror({ from: origin.base, to: dir, progress: false, keep: 1, now: later });
    expect([swept.swept, swept.removed, existsSync(join(dir, stray))]).toEqual([true, 1, false]);
    expect(existsSync(join(dir, SWEPT_MARK))).toBe(true);
    // A release retired by a finished sync: kept while in its grace period, swept after it.
    origin.roots = [demo()];
    const moved = await mirror({ from: origin.base, to: dir, progress: false, keep: 1 });
    expect([moved.release, moved.swept, retired(dir)]).toEqual([manifestA.release, false, [manifestB.release]]);
    const expired = await mirror({ from: origin.base, to: dir, progress: false, keep: 1, now: later });
    expect(expired.swept).toBe(true);
    expect(expired.removed).toBe([...objectsB.keys()].filter((sha) => !objectsA.has(sha)).length);
    expect(retired(dir)).toEqual([]);
    expect(verifyStore(dir, objectsA)).toEqual(whole);
  });

  it('a sync killed mid-way leaves the mirror serving its release; the next run fetches only what is left', async () => {
    const dir = join(work, 'mirror-killed');
    origin.roots = [treeB, demo()];
    // A mirror of release B: its files linked in place, then synced (hashed, not downloaded).
    linkObjects(dir, origin.roots, manifestB.entries);
    await mirror({ from: origin.base, to: dir, progress: false, keep: 1 });
    expect(held(dir)).toEqual([manifestB.release]);
    // Release A, with one file late in the manifest never answered: the process is killed there.
    origin.roots = [demo()];
    const hung = manifestA.entries.filter((e) => !objectsB.has(e.sha256))[1].path;
    expect(hung).toBeDefined();
    origin.reset();
    const run = await runCli(
      ['mirror', '--from', origin.base, '--to', dir, '--keep', '1', '--concurrency', '1'],
      (kill) => origin.hang.set(hung, kill),
    );
    origin.hang.clear();
    expect(run.signal).toBe('SIGKILL');
    expect(existsSync(join(dir, SWEPT_MARK))).toBe(false);
    expect(held(dir)).toEqual([manifestB.release]); // not switched
    await withServer(dir, async (server) => {
      const res = await fetch(`${server.api}/genes/PRR5`);
      expect(res.status).toBe(200);
      expect(res.headers.get(RELEASE_HEADER)).toBe(manifestB.release);
    });
    origin.reset();
    const s = await mirror({ from: origin.base, to: dir, progress: false, keep: 1 });
    expect([s.release, s.swept]).toEqual([manifestA.release, true]);
    expect(origin.requests.get(hung)).toBe(1);
    // No scratch file of the killed run is left; release B, retired, stays for the grace period.
    expect(verifyStore(dir, objectsA, objectsB)).toEqual(whole);
  });

  it('refuses to write into a directory that is not a mirror, or that holds a tree', async () => {
    const notMirror = join(work, 'not-a-mirror');
    mkdirSync(notMirror);
    writeFileSync(join(notMirror, 'precious.txt'), 'keep me');
    origin.reset();
    await expect(mirror({ from: origin.base, to: notMirror, progress: false })).rejects.toThrow(
      /is not empty and is not a mirror/,
    );
    expect(readFileSync(join(notMirror, 'precious.txt'), 'utf8')).toBe('keep me');
    await expect(mirror({ from: origin.base, to: demo(), progress: false })).rejects.toThrow(/holds a rendered tree/);
    expect(origin.total()).toBe(0);
  });

  it('CLI: `isoatlas mirror` exits 0 with a summary line; a bad --from or --concurrency exits 2', async () => {
    origin.roots = [treeB, demo()];
    origin.reset();
    const ok = await runCli(['mirror', '--from', origin.base, '--to', mirrorDir]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toMatch(
      new RegExp(
        `^mirrored release ${manifestB.release} \\(holding ${manifestB.release}\\): 0 objects fetched, 1 reused, 0 removed; 0 held objects checked by sha256, ${objectsB.size} trusted from the verified index, ${manifestB.shards.length} manifest shards unchanged since the last sync; 0\\.\\d MB downloaded in \\d+\\.\\d s \\(http://127\\.0\\.0\\.1:\\d+ → ${mirrorDir}\\)$`,
        'm',
      ),
    );

    const badFrom = await runCli(['mirror', '--from', 'ftp://example.org/atlas', '--to', mirrorDir]);
    expect(badFrom.code).toBe(2);
    expect(badFrom.stderr).toMatch(
      /--from "ftp:\/\/example\.org\/atlas": expected an http\(s\) base URL or s3:\/\/bucket/,
    );
    const badConcurrency = await runCli(['mirror', '--from', origin.base, '--to', mirrorDir, '--concurrency', '0']);
    expect(badConcurrency.code).toBe(2);
  });
});
