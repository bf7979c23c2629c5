// The nginx front's compressed copies: each file nginx answers from, in each coding, written once by
// `isoatlas nginx-config` with the server's own compression (edge/adapters/compress.ts), so nginx
// serves the server's representations byte for byte with no module and no CPU per request. They live
// in a directory of their own, named by the file's sha256 (a file that did not change between
// releases is not compressed again), never in the tree or mirror (its manifest lists what it holds).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CODINGS, CODING_SUFFIX, MIN_COMPRESSED_BYTES } from '../compression.js';
import { compressBodySync } from '../adapters/compress.js';
import type { ManifestEntry } from '../contract/tree.js';
import { BadInputError } from '../../build/common/errors.js';

/** Where a file's copy in a coding lives in the directory: `<sha256[0:2]>/<sha256><suffix>` (the
 * generated config's map derives the same path). */
const codedPath = (sha256: string, suffix: string) => `${sha256.slice(0, 2)}/${sha256}${suffix}`;

/** The file that marks a directory of copies as this command's: only there does it remove anything,
 * and only names of its own shape. */
export const COPIES_MARK = '.isoatlas-compressed-copies';
/** A copy's name within its two-character directory. */
const COPY_NAME = new RegExp(`^[0-9a-f]{64}(${CODINGS.map((c) => CODING_SUFFIX[c].replace('.', '\\.')).join('|')})$`);

export interface CompressedCopies {
  written: number;
  kept: number;
  removed: number;
}

/** Writes the copies, in every coding, of each file (by sha256, as the manifest lists it) of at least
 * MIN_COMPRESSED_BYTES that `dir` lacks, and removes the copies of files no longer listed (nginx, until
 * reloaded, falls back to the server for those). `read` gives a file's bytes, checked here against its
 * sha256. */
export async function writeCompressedCopies(
  dir: string,
  files: Map<string, ManifestEntry>,
  read: (entry: ManifestEntry) => Promise<Buffer | null>,
): Promise<CompressedCopies> {
  const result = { written: 0, kept: 0, removed: 0 };
  const present = new Set<string>();
  mkdirSync(dir, { recursive: true });
  const mark = join(dir, COPIES_MARK);
  if (!existsSync(mark)) {
    // A directory this command did not make (a mirror's objects/, say) is never written into or pruned.
    if (readdirSync(dir).length)
      throw new BadInputError(
        `${dir} holds files that \`isoatlas nginx-config\` did not write (no ${COPIES_MARK}): choose an empty or new --compressed-dir`,
      );
    writeFileSync(
      mark,
      'Compressed copies written by `isoatlas nginx-config`; it removes the ones no longer served.\n',
    );
  }
  for (const sub of readdirSync(dir)) {
    if (!/^[0-9a-f]{2}$/.test(sub)) continue;
    for (const name of readdirSync(join(dir, sub)))
      if (COPY_NAME.test(name) && name.startsWith(sub)) present.add(`${sub}/${name}`);
  }
  const wanted = new Set<string>();
  for (const entry of files.values()) {
    if (entry.size < MIN_COMPRESSED_BYTES) continue;
    const missing = CODINGS.filter((coding) => {
      const path = codedPath(entry.sha256, CODING_SUFFIX[coding]);
      wanted.add(path);
      return !present.has(path);
    });
    result.kept += CODINGS.length - missing.length;
    if (!missing.length) continue;
    const body = await read(entry);
    if (!body)
      throw new BadInputError(
        `${entry.path} is listed in the manifest but missing: sync the mirror or rebuild the tree`,
      );
    // A damaged file must not become a copy named by the sha256 it does not have.
    if (createHash('sha256').update(body).digest('hex') !== entry.sha256)
      throw new BadInputError(`${entry.path} does not match its manifest sha256: sync the mirror or rebuild the tree`);
    mkdirSync(join(dir, entry.sha256.slice(0, 2)), { recursive: true });
    for (const coding of missing) {
      const target = join(dir, codedPath(entry.sha256, CODING_SUFFIX[coding]));
      // Through a temporary name: nginx never serves half a copy, and two runs may write the same one.
      const tmp = `${target}.${process.pid}.tmp`;
      writeFileSync(tmp, compressBodySync(body, coding));
      renameSync(tmp, target);
      result.written++;
    }
  }
  for (const path of present) {
    if (wanted.has(path)) continue;
    rmSync(join(dir, path), { force: true });
    result.removed++;
  }
  return result;
}
