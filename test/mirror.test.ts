// `isoatlas mirror` against a real static HTTP server holding the demo tree: a complete first sync,
// no-change and incremental syncs (counted origin requests), local corruption, a corrupted download,
// a sync killed mid-way and resumed, a published store (pointer, history, objects), and the CLI.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fg from 'fast-glob';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import type { AddressInfo } from 'node:net';
import { mirror, parseMirrorSource } from '../build/mirror.js';
import { writeManifest } from '../build/render/manifest.js';
import { shardOf } from '../edge/contract/shards.js';
import { treePaths, type ManifestEntry } from '../edge/contract/tree.js';
import { objectKey } from '../edge/contract/store.js';
import { edgeIndex, readAliases, readManifest as readShardedManifest } from './helpers/tree.js';
import { startServer } from './helpers/server.js';

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
const newShards = (from: Manifest, to: Manifest) => to.shards.filter((s, i) => from.shards[i]?.sha256 !== s.sha256);
const sizeOf = (entries: ManifestEntry[]) => entries.reduce((sum, e) => sum + e.size, 0);

/** A static file server over a stack of directories (the first holding a path wins), counting
 * requests per path; paths can be made to fail (500), hang (never answered) or serve a wrong body. */
class StaticOrigin {
  roots: string[] = [];
  readonly requests = new Map<string, number>();
  readonly statuses = new Map<string, number[]>();
  /** Paths whose 200 answer was completely handed to the network. */
  readonly served = new Set<string>();
  readonly fail = new Set<string>();
  readonly hang = new Map<string, () => void>();
  readonly corrupt = new Map<string, Buffer>();
  base = '';
  private readonly server = http.createServer((req, res) => void this.answer(req, res));

  async start() {
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop() {
    this.server.closeAllConnections();
    await new Promise((ok) => this.server.close(ok));
  }

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

  private async answer(req: http.IncomingMessage, res: http.ServerResponse) {
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

/** Paths of `dir` whose content does not match the manifest, plus files the manifest does not list. */
function verifyTree(dir: string, manifest: Manifest): { wrong: string[]; missing: string[]; extra: string[] } {
  const wrong: string[] = [];
  const missing: string[] = [];
  for (const e of [...manifest.entries, ...manifest.shards]) {
    const file = join(dir, e.path);
    if (!existsSync(file)) missing.push(e.path);
    else if (sha256(readFileSync(file)) !== e.sha256) wrong.push(e.path);
  }
  const listed = new Set([...manifest.entries.map((e) => e.path), ...manifest.shards.map((e) => e.path), treePaths.manifest]);
  const extra = fg.sync('**', { cwd: dir, dot: true }).filter((p) => !listed.has(p));
  return { wrong, missing, extra };
}
const whole = { wrong: [], missing: [], extra: [] };

function runCli(args: string[], onSpawn?: (kill: () => void) => void): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdout!.resume();
  onSpawn?.(() => child.kill('SIGKILL'));
  return new Promise((ok) => child.once('exit', (code, signal) => ok({ code, signal, stderr })));
}

async function geneViaServe(dir: string, symbol: string): Promise<{ status: number; body: string }> {
  const server = await startServer({ dir });
  try {
    const res = await fetch(`${server.api}/genes/${symbol}`);
    return { status: res.status, body: await res.text() };
  } finally {
    await server.stop();
  }
}

const demo = () => inject('demoTree');
let origin: StaticOrigin;
let work: string;
let manifestA: Manifest;
let manifestBytesA: Buffer;
let N: number;
/** Overlay over the demo tree: three gene files rewritten and a manifest naming them. */
let treeB: string;
let manifestB: Manifest;
let changed: string[];
/** Overlay: a small release (a few demo files plus one of its own) — a previous mirror to replace. */
let treeS: string;
let manifestS: Manifest;
/** A published store: current.json, releases.json, and objects/ (symlinks into the demo tree). */
let published: string;
const PUBLISHED_RELEASE = '2026.11-published';
let prr5: string;
let mirrorDir: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-mirror-'));
  manifestBytesA = readFileSync(join(demo(), treePaths.manifest));
  manifestA = readManifest(demo());
  N = manifestA.entries.length;
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

  // Release S: a servable handful of files, one of which no other release has.
  treeS = join(work, 'tree-s');
  const extra = Buffer.from('{"only":"in release s"}');
  mkdirSync(join(treeS, 'extra'), { recursive: true });
  writeFileSync(join(treeS, 'extra/only-in-s.json'), extra);
  const keep = new Set([treePaths.release, treePaths.edgeIndex, treePaths.geneAliases(shardOf('prr5', edgeIndex(demo()).gene_aliases.shards)), treePaths.gene(prr5)]);
  const entriesS = [...manifestA.entries.filter((e) => keep.has(e.path)), { path: 'extra/only-in-s.json', size: extra.length, sha256: sha256(extra), content_type: 'application/json; charset=utf-8' }].sort((a, b) => (a.path < b.path ? -1 : 1));
  await writeManifest(treeS, 'small-s', entriesS);
  manifestS = readManifest(treeS);

  published = join(work, 'published');
  const { index } = readShardedManifest(demo());
  for (const { path, sha256: sha } of [...manifestA.entries, ...index.shards, { path: treePaths.manifest, sha256: sha256(manifestBytesA) }]) {
    const key = join(published, objectKey(sha));
    mkdirSync(dirname(key), { recursive: true });
    if (!existsSync(key)) symlinkSync(join(demo(), path), key);
  }
  // A corrupted store: the object named by a sha256 of zeros holds the manifest's bytes.
  mkdirSync(dirname(join(published, objectKey('0'.repeat(64)))), { recursive: true });
  symlinkSync(join(demo(), treePaths.manifest), join(published, objectKey('0'.repeat(64))));

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
  writeFileSync(join(published, 'releases.json'), JSON.stringify({ format: 2, releases: [release], pending: [], retired: [] }));
}

/** Where a file of release A is in the published store. */
const objectOf = (path: string) => objectKey(path === treePaths.manifest ? sha256(manifestBytesA) : manifestA.entries.find((e) => e.path === path)?.sha256 ?? readShardedManifest(demo()).index.shards.find((e) => e.path === path)!.sha256);

describe('isoatlas mirror', () => {
  it('parses sources: http(s) base URLs and s3://bucket[/prefix]; anything else is a usage error', () => {
    expect(parseMirrorSource('https://cdn.example.org/atlas/')).toEqual({ kind: 'http', base: 'https://cdn.example.org/atlas' });
    expect(parseMirrorSource('s3://bucket')).toEqual({ kind: 's3', bucket: 'bucket', prefix: '' });
    expect(parseMirrorSource('s3://bucket/atlas')).toEqual({ kind: 's3', bucket: 'bucket', prefix: 'atlas/' });
    for (const bad of ['ftp://example.org/x', 's3://', 'example.org', '/srv/tree']) expect(() => parseMirrorSource(bad), bad).toThrow(/expected an http\(s\) base URL or s3:/);
  });

  it('first sync downloads every file once, verified, and the mirror is served by `isoatlas serve`', async () => {
    origin.roots = [demo()];
    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    console.log(`first sync: ${s.fetched} files, ${(s.bytes / 1e6).toFixed(1)} MB in ${s.seconds.toFixed(2)} s`);
    const sizes = manifestA.entries.reduce((sum, e) => sum + e.size, 0);
    expect(s).toMatchObject({ release: manifestA.release, fetched: N, reused: 0, bytes: sizes + manifestBytesA.length + sizeOf(manifestA.shards) });
    expect(verifyTree(mirrorDir, manifestA)).toEqual(whole);
    expect(readFileSync(join(mirrorDir, treePaths.manifest)).equals(manifestBytesA)).toBe(true);
    // One request per file, the manifest and its shards, and the probe for a pointer (none: a plain tree root).
    expect(origin.requests.size).toBe(N + manifestA.shards.length + 2);
    expect([...origin.requests.values()].every((n) => n === 1)).toBe(true);
    expect(origin.statuses.get('current.json')).toEqual([404]);
    expect(existsSync(`${mirrorDir}.staging`)).toBe(false);

    const res = await geneViaServe(mirrorDir, 'PRR5');
    expect(res.status).toBe(200);
    expect(res.body).toBe(readFileSync(join(demo(), treePaths.gene(prr5)), 'utf8'));
  });

  it('a second sync with nothing changed downloads only manifest.json (its shards are verified in place)', async () => {
    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    console.log(`no-change sync: ${origin.total()} requests, ${s.seconds.toFixed(2)} s`);
    expect(s).toMatchObject({ release: manifestA.release, fetched: 0, reused: N, bytes: manifestBytesA.length });
    expect(origin.requested()).toEqual({ 'current.json': 1, 'manifest.json': 1 });
    expect(origin.statuses.get('current.json')).toEqual([404]);
    expect(verifyTree(mirrorDir, manifestA)).toEqual(whole);
  });

  it('detects corrupted files in the mirror (junk, or the same size with a flipped byte) and fetches only them', async () => {
    const [junked, flipped] = [manifestA.entries[10].path, treePaths.geneAliases(0)];
    writeFileSync(join(mirrorDir, junked), 'junk');
    const bytes = readFileSync(join(mirrorDir, flipped));
    bytes[100] ^= 1;
    writeFileSync(join(mirrorDir, flipped), bytes);
    expect(verifyTree(mirrorDir, manifestA).wrong.sort()).toEqual([junked, flipped].sort());

    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    expect(s).toMatchObject({ fetched: 2, reused: N - 2 });
    expect(origin.requested()).toEqual(Object.fromEntries([['current.json', 1], ['manifest.json', 1], [junked, 1], [flipped, 1]].sort()));
    expect(verifyTree(mirrorDir, manifestA)).toEqual(whole);
  });

  it('an incremental sync to a changed release fetches exactly the changed files', async () => {
    origin.roots = [treeB, demo()];
    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    console.log(`incremental sync: ${s.fetched} fetched, ${s.reused} reused, ${origin.total()} requests`);
    const changedBytes = manifestB.entries.filter((e) => changed.includes(e.path)).reduce((sum, e) => sum + e.size, 0);
    const manifestBytesB = readFileSync(join(treeB, treePaths.manifest));
    const shards = newShards(manifestA, manifestB);
    expect(shards.length).toBeGreaterThanOrEqual(1);
    expect(s).toMatchObject({ release: manifestB.release, fetched: 3, reused: N - 3, bytes: changedBytes + manifestBytesB.length + sizeOf(shards) });
    expect(origin.requested()).toEqual(Object.fromEntries([['current.json', 1], ['manifest.json', 1], ...changed.map((p) => [p, 1]), ...shards.map((e) => [e.path, 1])].sort()));
    expect(readFileSync(join(mirrorDir, treePaths.manifest)).equals(manifestBytesB)).toBe(true);
    expect(verifyTree(mirrorDir, manifestB)).toEqual(whole);
  });

  it('a download whose sha256 does not match is retried once, then fails naming the path; the mirror is untouched', async () => {
    origin.roots = [demo()]; // back to release A: the three changed files must be downloaded
    const bad = changed[1];
    origin.corrupt.set(bad, Buffer.from(readFileSync(join(demo(), bad), 'utf8').replace(/"/g, "'")));
    origin.reset();
    try {
      await expect(mirror({ from: origin.base, to: mirrorDir, progress: false })).rejects.toThrow(new RegExp(`^${bad.replace(/\./g, '\\.')}: downloaded \\d+ bytes with sha256 [0-9a-f]{64}, expected`));
    } finally {
      origin.corrupt.clear();
    }
    expect(origin.requests.get(bad)).toBe(2);
    expect(readManifest(mirrorDir)).toEqual(manifestB);
    expect(verifyTree(mirrorDir, manifestB)).toEqual(whole);
    // What was verified stays in the staging dir for the next run.
    expect(existsSync(`${mirrorDir}.staging`)).toBe(true);
    expect(existsSync(join(`${mirrorDir}.staging`, treePaths.manifest))).toBe(false);
  });

  it('mirrors a published layout through its pointer, checking the manifest against manifest_sha256', async () => {
    origin.roots = [published];

    writePointer('0'.repeat(64));
    origin.reset();
    await expect(mirror({ from: `${origin.base}/`, to: mirrorDir, progress: false })).rejects.toThrow(/^manifest\.json: downloaded \d+ bytes with sha256 [0-9a-f]{64}, expected sha256 0{64} \(the pointer's manifest_sha256\)$/);
    expect(readManifest(mirrorDir)).toEqual(manifestB);

    writePointer(sha256(manifestBytesA));
    origin.reset();
    const s = await mirror({ from: `${origin.base}/`, to: mirrorDir, progress: false });
    // Two of the three files release A needs were verified into the staging dir by the failed run
    // above (the third was the corrupted one): only that one is fetched now.
    const pointerBytes = readFileSync(join(published, 'current.json')).length;
    const shards = newShards(manifestB, manifestA);
    expect(s).toMatchObject({ release: PUBLISHED_RELEASE, fetched: 1, reused: N - 1, bytes: pointerBytes + manifestBytesA.length + sizeOf(shards) + manifestA.entries.find((e) => e.path === changed[1])!.size });
    expect(origin.requested()).toEqual(Object.fromEntries([['current.json', 1], [objectOf(changed[1]), 1], [objectOf(treePaths.manifest), 1], ...shards.map((e) => [objectOf(e.path), 1])].sort()));
    expect(verifyTree(mirrorDir, manifestA)).toEqual(whole);
    expect(existsSync(`${mirrorDir}.staging`)).toBe(false);

    origin.reset();
    const again = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    expect(again).toMatchObject({ fetched: 0, reused: N });
    expect(origin.requested()).toEqual({ 'current.json': 1, [objectOf(treePaths.manifest)]: 1 });
  });

  it('a sync killed mid-way leaves the previous mirror whole and servable; the next run resumes from staging', async () => {
    const dir = join(work, 'mirror-killed');
    origin.roots = [treeS, demo()];
    const small = await mirror({ from: origin.base, to: dir, progress: false });
    expect(small).toMatchObject({ release: 'small-s', fetched: manifestS.entries.length });
    const manifestBytesS = readFileSync(join(dir, treePaths.manifest));

    // Release A, with one file late in the manifest never answered: the process is killed there.
    origin.roots = [demo()];
    const hung = manifestA.entries[Math.floor(N * 0.6)].path;
    origin.reset();
    const run = await runCli(['mirror', '--from', origin.base, '--to', dir, '--concurrency', '8'], (kill) => origin.hang.set(hung, kill));
    origin.hang.clear();
    expect(run.signal).toBe('SIGKILL');
    const servedBefore = new Set([...origin.served].filter((p) => p !== treePaths.manifest && !p.startsWith('manifest/')));
    expect(servedBefore.size).toBeGreaterThan(N * 0.5);

    expect(readFileSync(join(dir, treePaths.manifest)).equals(manifestBytesS)).toBe(true);
    expect(verifyTree(dir, manifestS)).toEqual(whole);
    const res = await geneViaServe(dir, 'PRR5');
    expect(res.status).toBe(200);
    expect(res.body).toBe(readFileSync(join(demo(), treePaths.gene(prr5)), 'utf8'));
    expect(existsSync(`${dir}.staging`)).toBe(true);

    origin.reset();
    const s = await mirror({ from: origin.base, to: dir, progress: false });
    console.log(`resume after kill: ${servedBefore.size} files fetched before the kill, ${s.fetched} fetched and ${s.reused} reused after`);
    expect(s.fetched + s.reused).toBe(N);
    expect(origin.requests.get(hung)).toBe(1);
    // Nothing downloaded before the kill is downloaded again, except what was in flight (≤ 8).
    const again = [...origin.requests.keys()].filter((p) => servedBefore.has(p));
    expect(again.length).toBeLessThanOrEqual(8);
    expect(s.fetched).toBeLessThanOrEqual(N - servedBefore.size + 8);
    expect(s.reused).toBeGreaterThanOrEqual(servedBefore.size - 8);
    // The mirror is release A exactly: the file only release S had is not carried over.
    expect(verifyTree(dir, manifestA)).toEqual(whole);
    expect(existsSync(`${dir}.staging`)).toBe(false);
    expect(fg.sync('mirror-killed*', { cwd: work, onlyFiles: false })).toEqual(['mirror-killed']);
  });

  it('recovers a mirror left moved aside by a sync killed between its two renames', async () => {
    origin.roots = [published];
    const aside = `${mirrorDir}.old-424242`;
    renameSync(mirrorDir, aside);
    origin.reset();
    const s = await mirror({ from: origin.base, to: mirrorDir, progress: false });
    expect(s).toMatchObject({ release: PUBLISHED_RELEASE, fetched: 0, reused: N });
    expect(origin.total()).toBe(2);
    expect(verifyTree(mirrorDir, manifestA)).toEqual(whole);
    expect(existsSync(aside)).toBe(false);
  });

  it('refuses to replace a directory that is not a mirror', async () => {
    const notMirror = join(work, 'not-a-mirror');
    mkdirSync(notMirror);
    writeFileSync(join(notMirror, 'precious.txt'), 'keep me');
    origin.reset();
    await expect(mirror({ from: origin.base, to: notMirror, progress: false })).rejects.toThrow(/not a mirror, refusing to replace it/);
    expect(readFileSync(join(notMirror, 'precious.txt'), 'utf8')).toBe('keep me');
    expect(origin.total()).toBe(0);
  });

  it('CLI: `isoatlas mirror` exits 0 with a summary line; a bad --from or --concurrency exits 2', async () => {
    origin.roots = [published];
    origin.reset();
    const ok = await runCli(['mirror', '--from', origin.base, '--to', mirrorDir]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stderr).toMatch(new RegExp(`^mirrored release ${PUBLISHED_RELEASE}: 0 files fetched, ${N} reused, 0\\.0 MB downloaded in \\d+\\.\\d s \\(http://127\\.0\\.0\\.1:\\d+ → ${mirrorDir}\\)$`, 'm'));
    expect(origin.total()).toBe(2);

    const badFrom = await runCli(['mirror', '--from', 'ftp://example.org/atlas', '--to', mirrorDir]);
    expect(badFrom.code).toBe(2);
    expect(badFrom.stderr).toMatch(/--from "ftp:\/\/example\.org\/atlas": expected an http\(s\) base URL or s3:\/\/bucket/);
    const badConcurrency = await runCli(['mirror', '--from', origin.base, '--to', mirrorDir, '--concurrency', '0']);
    expect(badConcurrency.code).toBe(2);
    expect(origin.total()).toBe(2);
    expect(verifyTree(mirrorDir, manifestA)).toEqual(whole);
  });
});
