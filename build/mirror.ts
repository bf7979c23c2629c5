// `isoatlas mirror`: copies one release of a published atlas (or a statically hosted tree) into a
// local directory that `isoatlas serve --dir` serves. Incremental, verified, resumable and atomic:
//   - files already in the current mirror (or in a staging dir left by an interrupted run) whose
//     sha256 matches the manifest are reused (hard-linked), everything else is downloaded and checked
//     against the manifest's size and sha256;
//   - the new tree is assembled in `<to>.staging`, its manifest.json written last, and swapped in
//     with two renames, so the previous mirror stays whole and servable until the very end;
//   - when the mirror already holds exactly the source's release (same manifest, every file
//     verified, nothing else), nothing is written: a no-change sync downloads only the manifest.
import { createHash } from 'node:crypto';
import fg from 'fast-glob';
import {
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  type Stats,
} from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { POINTER_KEY, parsePointer } from '../edge/contract/store.js';
import { treePaths } from '../edge/contract/tree.js';
import type { Origin, OriginObject, ReleaseFiles } from '../edge/origin.js';
import { HttpOrigin } from '../edge/origins/http.js';
import { StoreOrigin } from '../edge/origins/store.js';
import { UsageError } from './errors.js';
import { startProgress, type Progress } from './progress.js';
import type { ManifestEntry } from '../edge/contract/tree.js';
import { loadManifest } from './manifest-reader.js';
import { SHA256_HEX } from '../edge/contract/manifest.js';
import { forEachLimited } from './concurrency.js';

export interface MirrorOptions {
  /** An http(s) base URL (a published bucket layout or a tree root) or `s3://bucket[/prefix]`. */
  from: string;
  /** The mirror directory (created, or replaced atomically). */
  to: string;
  /** Downloads in flight at once (default 16). */
  concurrency?: number;
  /** S3 only: region (default $AWS_REGION or us-east-1) and an S3-compatible endpoint. */
  region?: string;
  endpoint?: string;
  /** Draw a progress bar on an interactive terminal (default true). */
  progress?: boolean;
  log?: (line: string) => void;
}

export interface MirrorSummary {
  release: string;
  /** Tree files downloaded (manifest.json and the pointer not counted). */
  fetched: number;
  /** Tree files taken from the previous mirror or a leftover staging dir after checking their sha256. */
  reused: number;
  /** Bytes downloaded in all: the fetched files, manifest.json and (published sources) the pointer. */
  bytes: number;
  seconds: number;
}

export type MirrorSource = { kind: 'http'; base: string } | { kind: 's3'; bucket: string; prefix: string };

const DEFAULT_CONCURRENCY = 16;
/** Per request: generous, since a mirror may pull large files over slow links. */
const REQUEST_TIMEOUT_MS = 60_000;
const ATTEMPTS = 2;

/** Parses `--from`; a UsageError (exit 2) when it is neither an http(s) URL nor `s3://bucket[/prefix]`. */
export function parseMirrorSource(from: string): MirrorSource {
  const s3 = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(from);
  if (s3) {
    const prefix = s3[2] ?? '';
    return { kind: 's3', bucket: s3[1], prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/` };
  }
  let url: URL;
  try {
    url = new URL(from);
  } catch {
    url = new URL('invalid:');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.host) {
    throw new UsageError(`--from ${JSON.stringify(from)}: expected an http(s) base URL or s3://bucket[/prefix]`);
  }
  return { kind: 'http', base: from.replace(/\/+$/, '') };
}

export function mirrorSummaryLine(s: MirrorSummary, from: string, to: string): string {
  return `mirrored release ${s.release}: ${s.fetched} files fetched, ${s.reused} reused, ${(s.bytes / 1e6).toFixed(1)} MB downloaded in ${s.seconds.toFixed(1)} s (${from} → ${to})`;
}

export async function mirror(opts: MirrorOptions): Promise<MirrorSummary> {
  const started = performance.now();
  const log = opts.log ?? (() => {});
  const source = parseMirrorSource(opts.from);
  const concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency ${concurrency}: expected a positive integer`);
  const to = resolve(opts.to);
  const staging = `${to}.staging`;
  const current = currentMirror(to);
  let bytes = 0;

  // 1. Pin one release and read its manifest (the index checked against the pointer's
  // manifest_sha256, each shard against the index).
  const pinned = await pin(source, opts);
  bytes += pinned.pointerBytes;
  const manifest = await loadManifest(async (path, listed) => {
    // A shard the mirror already holds with the listed hash is not downloaded again.
    const local = listed && current ? verifiedBytes(join(current, path), listed) : null;
    if (local) return local;
    const expect = listed ?? (pinned.manifestSha256 ? { sha256: pinned.manifestSha256 } : undefined);
    const body = await fetchVerified(pinned.files, path, expect);
    bytes += body.length;
    return body;
  }, pinned.files.description);
  const manifestBody = manifest.indexBody;
  const manifestFiles = manifest.shards.length + 1;
  const release = pinned.release ?? manifest.index.release;
  if (pinned.release && manifest.index.release !== pinned.release) log(`warning: the pointer names release ${pinned.release} but its manifest says ${manifest.index.release}`);
  const finish = (fetched: number, reused: number): MirrorSummary => {
    const summary = { release, fetched, reused, bytes, seconds: (performance.now() - started) / 1000 };
    log(mirrorSummaryLine(summary, opts.from, to));
    return summary;
  };

  // 2. A staging dir left by an interrupted run is resumed, minus what this release does not list.
  const leftover = existsSync(staging);
  if (leftover) {
    const removed = pruneStaging(staging, new Set([...manifest.entries.map((e) => e.path), ...manifest.shards.map((s) => s.entry.path)]));
    log(`resuming from ${staging}${removed ? ` (${removed} files not in this release removed)` : ''}`);
  }

  // 3. What is already here with the right content: in the mirror, else in the leftover staging dir.
  // Local files are read synchronously: for thousands of small files that is several times faster
  // than a thread-pool round trip per call, and nothing else runs meanwhile.
  const fromCurrent: { entry: ManifestEntry; stats: Stats }[] = [];
  const toFetch: ManifestEntry[] = [];
  let alreadyStaged = 0;
  const checking = bar(opts, 'checking', manifest.entries.length);
  try {
    for (const [i, entry] of manifest.entries.entries()) {
      if (i % 256 === 0) await new Promise(setImmediate); // let the progress bar draw
      const stats = current ? verifiedStats(join(current, entry.path), entry) : null;
      if (stats) fromCurrent.push({ entry, stats });
      else if (leftover && verifiedStats(join(staging, entry.path), entry)) alreadyStaged++;
      else toFetch.push(entry);
      checking.tick();
    }
  } finally {
    checking.stop();
  }
  const reused = fromCurrent.length + alreadyStaged;

  // Nothing to do when the mirror already holds exactly this release (and nothing else).
  if (current === to && fromCurrent.length === manifest.entries.length && sameBytes(join(to, treePaths.manifest), manifestBody) && listFiles(to).length === manifest.entries.length + manifestFiles) {
    if (leftover) rmSync(staging, { recursive: true, force: true });
    return finish(0, reused);
  }

  const progress = bar(opts, 'mirroring', fromCurrent.length + toFetch.length);
  try {
    // 4. Hard-link the reusable files of the mirror into staging (copies where links fail).
    mkdirSync(staging, { recursive: true });
    const dirs = new Set<string>();
    const ensureDir = (dir: string) => {
      if (!dirs.has(dir)) mkdirSync(dir, { recursive: true });
      dirs.add(dir);
    };
    for (const [i, { entry, stats }] of fromCurrent.entries()) {
      if (i % 256 === 0) await new Promise(setImmediate);
      const staged = join(staging, entry.path);
      if (leftover) {
        const there = lstatSync(staged, { throwIfNoEntry: false });
        if (there && there.ino === stats.ino && there.dev === stats.dev) {
          progress.tick();
          continue; // linked by the interrupted run
        }
        // Never write into an existing staging file: it may be a hard link into the live mirror.
        if (there) rmSync(staged, { recursive: true, force: true });
      }
      ensureDir(dirname(staged));
      try {
        linkSync(join(current!, entry.path), staged);
      } catch {
        copyFileSync(join(current!, entry.path), staged);
      }
      progress.tick();
    }

    // 5. Download the rest, verified, a bounded number at a time.
    // Written asynchronously, so the disk works while further downloads are in flight.
    await forEachLimited(toFetch, concurrency, async (entry) => {
      const body = await fetchVerified(pinned.files, entry.path, entry);
      const staged = join(staging, entry.path);
      ensureDir(dirname(staged));
      await writeAtomically(staged, body);
      bytes += body.length;
      progress.tick();
    });
  } finally {
    progress.stop();
  }

  // 6. The manifest last (its shards, then its index), then swap the staging dir in.
  for (const shard of manifest.shards) {
    mkdirSync(dirname(join(staging, shard.entry.path)), { recursive: true });
    await writeAtomically(join(staging, shard.entry.path), shard.body);
  }
  await writeAtomically(join(staging, treePaths.manifest), manifestBody);
  swapIn(staging, to);
  return finish(toFetch.length, reused);
}

/** A progress bar (only on an interactive terminal, and not when opts.progress is false). */
function bar(opts: MirrorOptions, label: string, total: number): Progress {
  if (opts.progress === false) return { tick() {}, stop() {} };
  const progress = startProgress(label, total);
  let drawing = true;
  return {
    tick: (n) => progress.tick(n),
    stop: () => {
      if (drawing) progress.stop();
      drawing = false;
    },
  };
}

interface PinnedSource {
  /** Undefined for a tree root: the release is the manifest's. */
  release?: string;
  files: ReleaseFiles;
  manifestSha256?: string;
  pointerBytes: number;
}

/** Opens the source and pins one release: every later read goes through `origin`. */
async function pin(source: MirrorSource, opts: MirrorOptions): Promise<PinnedSource> {
  const raw = source.kind === 's3' ? await s3Origin(source, opts) : new HttpOrigin(source.base, REQUEST_TIMEOUT_MS);
  const pointer = await retried(() => raw.read(POINTER_KEY));
  if (!pointer) {
    if (source.kind === 's3') throw new Error(`${raw.description} has no ${POINTER_KEY}: nothing has been published there`);
    return { files: raw, pointerBytes: 0 }; // a static host of a rendered tree
  }
  let manifestSha256: string | undefined;
  try {
    const parsed = parsePointer(new TextDecoder().decode(pointer.body));
    manifestSha256 = SHA256_HEX.test(parsed.manifest_sha256) ? parsed.manifest_sha256 : undefined;
  } catch (err) {
    throw new Error(`${raw.description}${POINTER_KEY}: ${(err as Error).message}`);
  }
  // The pointer just read is handed to StoreOrigin, so it is requested once and both agree.
  const pinned = (await new StoreOrigin(new PrimedOrigin(raw, POINTER_KEY, pointer)).pin())!;
  return { release: pinned.release, files: pinned.files, manifestSha256, pointerBytes: pointer.body.length };
}

async function s3Origin(source: Extract<MirrorSource, { kind: 's3' }>, opts: MirrorOptions): Promise<Origin> {
  // Loaded on demand: the AWS SDK is large and only this source needs it.
  const { S3Client } = await import('@aws-sdk/client-s3');
  const { S3RawOrigin } = await import('../edge/origins/s3.js');
  const client = new S3Client({
    region: opts.region ?? process.env.AWS_REGION ?? 'us-east-1',
    endpoint: opts.endpoint,
    forcePathStyle: Boolean(opts.endpoint),
    // Integrity is checked against the manifest; skip the SDK's newer checksums, which S3-compatible
    // servers do not all understand.
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  return new S3RawOrigin(client, source.bucket, source.prefix, REQUEST_TIMEOUT_MS);
}

/** Answers one path from a body already read, once; everything else from the raw origin. */
class PrimedOrigin implements Origin {
  readonly description: string;
  constructor(
    private readonly raw: Origin,
    private readonly path: string,
    private primed: OriginObject | null,
  ) {
    this.description = raw.description;
  }
  async read(path: string): Promise<OriginObject | null> {
    if (path === this.path && this.primed) {
      const object = this.primed;
      this.primed = null;
      return object;
    }
    return this.raw.read(path);
  }
}

async function retried<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (n >= ATTEMPTS) throw err;
    }
  }
}

/** Downloads one file and checks it against the manifest (one retry on any failure). */
async function fetchVerified(origin: ReleaseFiles, path: string, expect?: { size?: number; sha256: string }): Promise<Buffer> {
  return retried(async () => {
    const object = await origin.read(path, expect?.sha256);
    if (!object) throw new Error(`${path}: not found at ${origin.description}${path === treePaths.manifest ? ' (not an isoatlas tree or published atlas)' : ', though the manifest lists it'}`);
    const body = Buffer.from(object.body.buffer, object.body.byteOffset, object.body.byteLength);
    if (expect) {
      const sha256 = createHash('sha256').update(body).digest('hex');
      if (sha256 !== expect.sha256 || (expect.size !== undefined && body.length !== expect.size)) {
        const wanted = expect.size === undefined ? `sha256 ${expect.sha256} (the pointer's manifest_sha256)` : `${expect.size} bytes with sha256 ${expect.sha256}`;
        throw new Error(`${path}: downloaded ${body.length} bytes with sha256 ${sha256}, expected ${wanted}`);
      }
    }
    return body;
  });
}

/** The directory to reuse files from: the mirror, or (after a sync killed between its two renames)
 * the previous mirror it had just moved aside. Refuses to replace a directory that is not a mirror. */
function currentMirror(to: string): string | null {
  if (existsSync(to)) {
    if (!statSync(to).isDirectory()) throw new UsageError(`--to ${to} exists and is not a directory`);
    if (existsSync(join(to, treePaths.manifest))) return to;
    if (readdirSync(to).length > 0) throw new UsageError(`--to ${to} is not empty and holds no ${treePaths.manifest}: not a mirror, refusing to replace it`);
    return null;
  }
  const old = oldDirs(to).filter((d) => existsSync(join(d, treePaths.manifest)));
  return old.length ? old.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0] : null;
}

/** `<to>.old-<pid>` dirs: previous mirrors moved aside by a swap. */
function oldDirs(to: string): string[] {
  const prefix = `${basename(to)}.old-`;
  if (!existsSync(dirname(to))) return [];
  return readdirSync(dirname(to))
    .filter((name) => name.startsWith(prefix) && /^\d+$/.test(name.slice(prefix.length)))
    .map((name) => join(dirname(to), name));
}

/** Every non-directory below `dir`, as a relative path with `/` separators. */
function listFiles(dir: string): string[] {
  return fg.sync('**', { cwd: dir, dot: true, onlyFiles: true, followSymbolicLinks: false });
}

/** Removes from a leftover staging dir every file the manifest does not list (and empty dirs), e.g.
 * files of another release or temporary files of a killed run. Returns how many were removed. */
function pruneStaging(staging: string, listed: Set<string>): number {
  if (!statSync(staging).isDirectory()) throw new Error(`${staging} is in the way and is not a directory`);
  let removed = 0;
  for (const path of listFiles(staging)) {
    if (listed.has(path)) continue;
    rmSync(join(staging, path), { force: true });
    removed++;
  }
  const prune = (dir: string): boolean => {
    let empty = true;
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (!d.isDirectory() || !prune(join(dir, d.name))) empty = false;
    }
    if (empty && dir !== staging) rmdirSync(dir);
    return empty;
  };
  prune(staging);
  return removed;
}

/** The file's stats when it is a regular file with the entry's size and sha256, else null. */
function verifiedStats(file: string, entry: ManifestEntry): Stats | null {
  try {
    const stats = statSync(file, { throwIfNoEntry: false });
    if (!stats || !stats.isFile() || stats.size !== entry.size) return null;
    return createHash('sha256').update(readFileSync(file)).digest('hex') === entry.sha256 ? stats : null;
  } catch {
    return null;
  }
}

/** The file's bytes when they have the entry's size and sha256 (read once), else null. */
function verifiedBytes(file: string, entry: ManifestEntry): Buffer | null {
  try {
    const body = readFileSync(file);
    return body.length === entry.size && createHash('sha256').update(body).digest('hex') === entry.sha256 ? body : null;
  } catch {
    return null;
  }
}

function sameBytes(file: string, body: Buffer): boolean {
  try {
    return readFileSync(file).equals(body);
  } catch {
    return false;
  }
}

/** Writes via a temporary name and a rename: a killed run leaves no half-written file under a real
 * name, and a staging file hard-linked into the live mirror is replaced, never written through. */
async function writeAtomically(file: string, body: Buffer): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  try {
    await writeFile(tmp, body);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

function swapIn(staging: string, to: string): void {
  if (existsSync(to)) {
    const old = `${to}.old-${process.pid}`;
    rmSync(old, { recursive: true, force: true });
    renameSync(to, old);
    renameSync(staging, to);
  } else renameSync(staging, to);
  for (const old of oldDirs(to)) rmSync(old, { recursive: true, force: true });
}

