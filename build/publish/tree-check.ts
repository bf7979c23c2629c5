// Publish's check of a tree before anything is written to the store: every file the manifest lists
// is there with its size, and every file publish will upload hashes to the sha256 the manifest lists.
// A tree edited or cut short after it was built is refused whole (exit 3), instead of being caught
// mid-upload with the release left pending in the store.
//   - Only what will be uploaded is hashed: objects the store has already are never read from the
//     tree, so the store's bytes, not the tree's, are what readers get for them.
//   - A file present in the tree but not in its manifest is ignored: publish uploads only what the
//     manifest lists and readers are served only that, and finding such files would mean walking
//     the whole tree.
//   - Verified bodies are kept, up to a budget, for the upload to use: a publish that uploads a small
//     part of the tree (the usual case: a release shares most objects with the last) reads each file
//     once. Beyond the budget, memory matters more than a second read: the upload reads the file
//     again and hashes it again, so a file changed between the check and its upload is still never
//     uploaded.
//   - The tree's files and the upload come a page at a time (publish-ledger.ts), so the check holds
//     a page of them, not the whole manifest.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { treePaths } from '../../edge/contract/tree.js';
import { PACK_TARGET_BYTES } from '../../edge/contract/packs.js';
import { BadInputError } from '../common/errors.js';
import { forEachLimited } from '../common/concurrency.js';
import { startProgress } from '../common/progress.js';

/** A file publish uploads: its first path in the tree, its size and sha256. */
export interface TreeObject {
  sha256: string;
  size: number;
  path: string;
}

/** Items a page at a time, and how many in all (for the progress bar). */
export interface Paged<T> {
  count: number;
  pages(): Iterable<readonly T[]>;
}

export interface TreeCheckOptions {
  dir: string;
  /** Every file the tree's manifest lists. */
  files: Paged<{ path: string; size: number }>;
  /** What publish will upload (objects the store lacks). */
  upload: Paged<TreeObject>;
  /** The bytes of the tree's own manifest objects (manifest.json and its shards), checked when the
   * manifest was read: those are the ones to upload. */
  held?: (sha256: string) => Buffer | null;
  /** The store, for the message: nothing was written to it. */
  where: string;
  concurrency: number;
  progress?: boolean;
  /** Bytes of verified bodies kept for the upload. */
  keepBytes?: number;
}

export interface CheckedTree {
  /** The bytes of an object to upload: the verified body kept by the check, or read and hashed again.
   * A body kept is handed over (its budget freed) unless `keep` (publish reads it once more to pack it). */
  body(o: TreeObject, keep?: boolean): Promise<Buffer>;
}

/** How many problems the message names; the rest are counted. */
const NAMED = 5;
const STATS_IN_FLIGHT = 64;
/** A pack's worth (edge/contract/packs.ts): what publish holds of bodies at once anyway. */
const KEEP_BYTES = PACK_TARGET_BYTES;

const sha256Of = (body: Buffer) => createHash('sha256').update(body).digest('hex');

export async function checkTree(opts: TreeCheckOptions): Promise<CheckedTree> {
  const problems = new Map<string, string>();
  const bar =
    opts.progress === false
      ? { tick() {}, stop() {} }
      : startProgress('checking the tree', opts.files.count + opts.upload.count);
  const held = opts.held ?? (() => null);
  const kept = new Map<string, Buffer>();
  let keptBytes = 0;
  try {
    for (const page of opts.files.pages())
      await forEachLimited(page, STATS_IN_FLIGHT, async (e) => {
        const s = await stat(join(opts.dir, e.path)).catch(() => null);
        if (!s?.isFile()) problems.set(e.path, 'missing');
        else if (s.size !== e.size) problems.set(e.path, `${s.size} bytes, the manifest lists ${e.size}`);
        bar.tick();
      });
    for (const page of opts.upload.pages())
      await forEachLimited(page, opts.concurrency, async (o) => {
        bar.tick();
        if (kept.has(o.sha256) || held(o.sha256) || problems.has(o.path)) return;
        const body = await readFile(join(opts.dir, o.path)).catch(() => null);
        if (!body) return void problems.set(o.path, 'missing');
        if (body.length !== o.size || sha256Of(body) !== o.sha256)
          return void problems.set(o.path, 'its sha256 is not the one the manifest lists (edited since the build)');
        if (keptBytes + body.length <= (opts.keepBytes ?? KEEP_BYTES)) {
          kept.set(o.sha256, body);
          keptBytes += body.length;
        }
      });
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
      const heldBody = held(o.sha256);
      if (heldBody) return heldBody;
      const body = kept.get(o.sha256);
      if (body && keep) return body;
      if (body) {
        // The upload holds it from here: the budget is freed for the next ones.
        kept.delete(o.sha256);
        return body;
      }
      const read = await readFile(join(opts.dir, o.path)).catch(() => null);
      if (!read || sha256Of(read) !== o.sha256) {
        throw new BadInputError(
          `${join(opts.dir, o.path)} changed while publishing (after the check, before its upload: it no longer matches ${treePaths.manifest}). ` +
            `The release stays pending in ${opts.where}: put the tree back as built and publish it again to finish, or leave it for \`isoatlas gc\` to drop`,
        );
      }
      return read;
    },
  };
}
