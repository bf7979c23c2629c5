// The nginx front's compressed copies: each file nginx may answer from, in each coding, written once by
// `isoatlas nginx-config` with the server's own compression (edge/adapters/compress.ts), so nginx
// serves the server's representations byte for byte with no module and no CPU per request. They live
// in a directory of their own, named by the file's sha256 (a file that did not change between
// releases is not compressed again), never in the tree or mirror (its manifest lists what it holds).
// The files are handed over one at a time as the manifest is read shard by shard, and noted on disk
// by the first two characters of their sha256; each of those 256 groups is then brought up to date
// on its own (copies written, copies of files no longer served removed): what is held at once is one
// group, whatever the release's size.
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { CODINGS, CODING_SUFFIX, MIN_COMPRESSED_BYTES } from '../compression.js';
import { compressBodySync } from '../adapters/compress.js';
import type { ManifestEntry } from '../contract/tree.js';
import { BadInputError } from '../../build/common/errors.js';
import { copyPath } from './front-file.js';

/** The file that marks a directory of copies as this command's: only there does it remove anything,
 * and only names of its own shape. */
export const COPIES_MARK = '.isoatlas-compressed-copies';
/** A copy's name within its two-character directory. */
const COPY_NAME = new RegExp(`^[0-9a-f]{64}(${CODINGS.map((c) => CODING_SUFFIX[c].replace('.', '\\.')).join('|')})$`);
/** Bytes of noted files held per group before they are appended to the group's list. */
const NOTED_BYTES = 16 * 1024;

export interface CompressedCopies {
  written: number;
  kept: number;
  removed: number;
}

/** The copies in `dir`, brought up to date with the files handed to `want`: once every file served is
 * handed over, `finish` writes the copies, in every coding, of each file (by sha256, as the manifest
 * lists it) of at least MIN_COMPRESSED_BYTES that `dir` lacks, and removes the copies of files no longer
 * listed (nginx, until reloaded, passes their requests to the server). `read` gives a file's bytes,
 * checked here against its sha256. */
export class CopiesWriter {
  private readonly lists: string;
  private readonly noted = new Map<string, string[]>();
  private notedBytes = new Map<string, number>();

  constructor(
    private readonly dir: string,
    private readonly read: (entry: ManifestEntry) => Promise<Buffer | null>,
  ) {
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
    // Beside the copies (a name of no copy's shape), removed when done.
    this.lists = join(dir, `.wanted.${process.pid}`);
    rmSync(this.lists, { recursive: true, force: true });
    mkdirSync(this.lists);
  }

  /** A file nginx may answer from: too small a file has no copies. */
  want(entry: ManifestEntry): void {
    if (entry.size < MIN_COMPRESSED_BYTES) return;
    const group = entry.sha256.slice(0, 2);
    const line = `${JSON.stringify([entry.sha256, entry.path, entry.size])}\n`;
    const lines = this.noted.get(group) ?? [];
    lines.push(line);
    this.noted.set(group, lines);
    const bytes = (this.notedBytes.get(group) ?? 0) + line.length;
    this.notedBytes.set(group, bytes);
    if (bytes >= NOTED_BYTES) this.flush(group);
  }

  private flush(group: string): void {
    const lines = this.noted.get(group);
    if (!lines?.length) return;
    appendFileSync(join(this.lists, group), lines.join(''));
    this.noted.delete(group);
    this.notedBytes.delete(group);
  }

  async finish(): Promise<CompressedCopies> {
    const result = { written: 0, kept: 0, removed: 0 };
    try {
      for (const group of [...this.noted.keys()]) this.flush(group);
      for (let g = 0; g < 256; g++) await this.update(g.toString(16).padStart(2, '0'), result);
    } finally {
      rmSync(this.lists, { recursive: true, force: true });
    }
    return result;
  }

  /** One group: the copies its files lack written, those of files no longer listed removed. */
  private async update(group: string, result: CompressedCopies): Promise<void> {
    const sub = join(this.dir, group);
    const present = new Set(
      existsSync(sub) ? readdirSync(sub).filter((name) => COPY_NAME.test(name) && name.startsWith(group)) : [],
    );
    const list = join(this.lists, group);
    const wanted = new Map<string, ManifestEntry>();
    if (existsSync(list))
      for (const line of readFileSync(list, 'utf8').split('\n')) {
        if (!line) continue;
        const [sha256, path, size] = JSON.parse(line) as [string, string, number];
        wanted.set(sha256, { path, sha256, size } as ManifestEntry);
      }
    for (const entry of wanted.values()) {
      const missing = CODINGS.filter((coding) => !present.has(`${entry.sha256}${CODING_SUFFIX[coding]}`));
      result.kept += CODINGS.length - missing.length;
      if (!missing.length) continue;
      const body = await this.read(entry);
      if (!body)
        throw new BadInputError(
          `${entry.path} is listed in the manifest but missing: sync the mirror or rebuild the tree`,
        );
      // A damaged file must not become a copy named by the sha256 it does not have.
      if (createHash('sha256').update(body).digest('hex') !== entry.sha256)
        throw new BadInputError(
          `${entry.path} does not match its manifest sha256: sync the mirror or rebuild the tree`,
        );
      mkdirSync(sub, { recursive: true });
      for (const coding of missing) {
        const target = join(this.dir, copyPath(entry.sha256, CODING_SUFFIX[coding]));
        // Through a temporary name: nginx never serves half a copy, and two runs may write the same one.
        const tmp = `${target}.${process.pid}.tmp`;
        writeFileSync(tmp, compressBodySync(body, coding));
        renameSync(tmp, target);
        result.written++;
      }
    }
    for (const name of present) {
      if (wanted.has(name.slice(0, 64))) continue;
      rmSync(join(sub, name), { force: true });
      result.removed++;
    }
  }
}
