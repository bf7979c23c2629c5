// Publish's check of a tree before anything is written to the store: every file the manifest lists
// is there with its size, and every file publish will upload hashes to the sha256 the manifest lists.
// A tree edited or cut short after it was built is refused whole (exit 3), instead of being caught
// mid-upload with the release left pending in the store.
//   - Only what will be uploaded is hashed: objects the store has already are never read from the
//     tree, so the store's bytes, not the tree's, are what readers get for them.
//   - A file present in the tree but not in its manifest is ignored: publish uploads only what the
//     manifest lists and readers are served only that, and finding such files would mean walking
//     the whole tree.
//   - Each file is read once here, and what publish packs is cut and hashed on the way (the caller's
//     `each`), so no second pass reads the tree to hash the packs.
//   - Verified bodies are kept, up to a budget, for the upload to use: a publish that uploads a small
//     part of the tree (the usual case: a release shares most objects with the last) reads each file
//     once. Beyond the budget, memory matters more than a second read: the upload reads the file
//     again and hashes it again, so a file changed between the check and its upload is still never
//     uploaded.
//   - The upload comes a page at a time (publish-ledger.ts) and the tree's files a shard at a time (to
//     the size check's worker), so the check holds a page or a shard of them, not the whole manifest.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { setImmediate as yieldToEvents } from 'node:timers/promises';
import { treePaths } from '../../edge/contract/tree.js';
import { PACK_TARGET_BYTES } from '../../edge/contract/packs.js';
import { BadInputError } from '../common/errors.js';
import { startProgress } from '../common/progress.js';

/** A file publish uploads: its first path in the tree, its size and sha256; `kind` 'file' for a
 * file of the tree, another kind for a manifest object (whose bytes the caller holds). */
export interface TreeObject {
  sha256: string;
  size: number;
  path: string;
  kind?: string;
}

/** Items a page at a time, and how many in all (for the progress bar). */
export interface Paged<T> {
  count: number;
  pages(): Iterable<readonly T[]>;
}

export interface TreeCheckOptions {
  dir: string;
  /** Every file the tree's manifest lists: their sizes are checked (unless `sizes` does it). */
  files?: Paged<{ path: string; size: number }>;
  /** The size check, already handed every file the tree's manifest lists (startSizeCheck). */
  sizes?: SizeCheck;
  /** What publish will read from the tree (objects the store lacks, and those of packs it builds). */
  upload: Paged<TreeObject>;
  /** The bytes of the manifest objects (manifest.json and its shards), checked when the manifest
   * was read or encoded: those are the ones to upload. */
  held?: (sha256: string) => Buffer | null;
  /** Each verified body, in the order `upload` gives them (publish cuts and hashes its packs here). */
  each?: (o: TreeObject, body: Buffer) => void;
  /** The store, for the message: nothing was written to it. */
  where: string;
  progress?: boolean;
  /** Bytes of verified bodies kept for the upload. */
  keepBytes?: number;
}

export interface CheckedTree {
  /** The bytes of an object to upload: the verified body kept by the check, or read and hashed again.
   * A body kept is handed over (its budget freed) unless `keep` (publish reads it once more). */
  body(o: TreeObject, keep?: boolean): Promise<Buffer>;
}

/** How many problems the message names; the rest are counted. */
const NAMED = 5;
/** Two packs' worth (edge/contract/packs.ts): the first bodies the upload needs are at hand. */
const KEEP_BYTES = 2 * PACK_TARGET_BYTES;

const sha256Of = (body: Buffer) => createHash('sha256').update(body).digest('hex');

/** A file's bytes, or null when it cannot be read (it is named as missing). */
function readOrNull(file: string): Buffer | null {
  try {
    return readFileSync(file);
  } catch {
    return null;
  }
}

/** Checks the tree, reading each file at most once. The files are read in this thread, a page at a
 * time with the event loop let through between pages: a read of a small file is a few system calls,
 * and handing each to the thread pool costs more CPU than making them here. */
export async function checkTree(opts: TreeCheckOptions): Promise<CheckedTree> {
  const sizes = opts.sizes ?? handedAll(startSizeCheck(opts.dir), opts.files?.pages() ?? []);
  const bar =
    opts.progress === false ? { tick() {}, stop() {} } : startProgress('checking the tree', opts.upload.count);
  const held = (o: TreeObject) => (o.kind === 'file' ? null : (opts.held?.(o.sha256) ?? null));
  const kept = new Map<string, Buffer>();
  let keptBytes = 0;
  let problems: Map<string, string>;
  try {
    problems = await sizes.problems;
    for (const page of opts.upload.pages()) {
      for (const o of page) {
        const heldBody = held(o);
        if (heldBody) {
          if (problems.size === 0) opts.each?.(o, heldBody);
          continue;
        }
        if (kept.has(o.sha256) || problems.has(o.path)) continue;
        const body = readOrNull(join(opts.dir, o.path));
        if (!body) {
          problems.set(o.path, 'missing');
          continue;
        }
        if (body.length !== o.size) {
          problems.set(o.path, `${body.length} bytes, the manifest lists ${o.size}`);
          continue;
        }
        if (sha256Of(body) !== o.sha256) {
          problems.set(o.path, 'its sha256 is not the one the manifest lists (edited since the build)');
          continue;
        }
        if (problems.size === 0) opts.each?.(o, body);
        if (keptBytes + body.length <= (opts.keepBytes ?? KEEP_BYTES)) {
          kept.set(o.sha256, body);
          keptBytes += body.length;
        }
      }
      bar.tick(page.length);
      await yieldToEvents();
    }
  } finally {
    bar.stop();
  }
  if (problems.size > 0) {
    const named = [...problems]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .slice(0, NAMED)
      .map(([path, what]) => `${path} (${what})`);
    const more = problems.size > NAMED ? ` and ${problems.size - NAMED} more` : '';
    throw new BadInputError(
      `${problems.size} file${problems.size === 1 ? '' : 's'} of the tree ${opts.dir} ${problems.size === 1 ? 'does' : 'do'} not match its ${treePaths.manifest}: ${named.join(', ')}${more}. ` +
        `The tree was changed after it was built: build it again (\`isoatlas build --force\`) and publish that. Nothing was written to ${opts.where}`,
    );
  }
  return {
    async body(o, keep) {
      const heldBody = held(o);
      if (heldBody) return heldBody;
      const body = kept.get(o.sha256);
      if (body && keep) return body;
      if (body) {
        // The upload holds it from here: the budget is freed for the next ones.
        kept.delete(o.sha256);
        return body;
      }
      const read = readOrNull(join(opts.dir, o.path));
      if (read && read.length === o.size && sha256Of(read) === o.sha256) return read;
      throw changedWhilePublishing(opts.dir, o.path, opts.where);
    },
  };
}

const changedWhilePublishing = (dir: string, path: string, where: string) =>
  new BadInputError(
    `${join(dir, path)} changed while publishing (after the check, before its upload: it no longer matches ${treePaths.manifest}). ` +
      `The release stays pending in ${where}: put the tree back as built and publish it again to finish, or leave it for \`isoatlas gc\` to drop`,
  );

/** The check that every file the manifest lists is there with its size: one stat each, made by a
 * worker thread, so that publish can hand it each shard's files as it reads the tree's manifest and
 * the stats never hold up its parsing. A stat is a blocking call that costs far more than handing the
 * path over; handing each to the thread pool instead costs more CPU in this thread than the stats
 * themselves. The files the check reads whole are stated too: fewer than the rest but on a first
 * publish, where the worker's stats take a small part of the time the hashing does. */
export interface SizeCheck {
  /** Hands these files to the check. */
  add(files: readonly { path: string; size: number }[]): void;
  /** No more files: `problems` settles once the worker has checked those it was handed. */
  end(): void;
  /** The files that are missing or of another size, by path. */
  problems: Promise<Map<string, string>>;
  /** Stops the check (the caller gave up): `problems` fails. */
  stop(): void;
}

/** A page of files to stat, or the end of them; the worker answers the end with what it found. */
type SizeMessage = { paths: string[]; sizes: number[] } | { end: true };

// CommonJS, as Node runs the source of an `eval` worker (file-batches.ts says why plain text).
const SIZE_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const { join } = require('node:path');
const found = [];
parentPort.on('message', (m) => {
  if (m.end) return parentPort.postMessage(found);
  for (let i = 0; i < m.paths.length; i++) {
    // Not there, a file where a directory was, a loop of links: all 'missing', as the check says.
    let size = null;
    try {
      const s = statSync(join(workerData.dir, m.paths[i]));
      if (s.isFile()) size = s.size;
    } catch {}
    if (size === null) found.push([m.paths[i], 'missing']);
    else if (size !== m.sizes[i]) found.push([m.paths[i], size + ' bytes, the manifest lists ' + m.sizes[i]]);
  }
});
`;

/** The check, handed these files and told they are all. */
function handedAll(sizes: SizeCheck, pages: Iterable<readonly { path: string; size: number }[]>): SizeCheck {
  for (const page of pages) sizes.add(page);
  sizes.end();
  return sizes;
}

export function startSizeCheck(dir: string): SizeCheck {
  const worker = new Worker(SIZE_WORKER_SOURCE, { eval: true, workerData: { dir } });
  // A publish that fails never waits for it.
  worker.unref();
  const post = (m: SizeMessage) => worker.postMessage(m);
  const problems = new Promise<Map<string, string>>((resolve, reject) => {
    worker.once('message', (found: [string, string][]) => {
      resolve(new Map(found));
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', () => reject(new Error('the size check of the tree stopped before it finished')));
  });
  // Awaited by the check; a publish that fails before it stops it and never awaits it.
  problems.catch(() => {});
  return {
    add: (files) => post({ paths: files.map((f) => f.path), sizes: files.map((f) => f.size) }),
    end: () => post({ end: true }),
    problems,
    stop() {
      void worker.terminate();
    },
  };
}

/** A file of the tree read again after the check, refused if it no longer hashes to its sha256. */
export function readChecked(dir: string, o: { path: string; sha256: string }, where: string): Buffer {
  const read = readOrNull(join(dir, o.path));
  if (!read || sha256Of(read) !== o.sha256) throw changedWhilePublishing(dir, o.path, where);
  return read;
}
