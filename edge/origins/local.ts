// Reads the tree from a local directory: the local server and offline mirrors.
import { readFile, stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { OriginError, type Origin, type OriginObject, type PinnedRelease, type VersionedOrigin } from '../origin.js';
import { treePaths } from '../contract/tree.js';

export class LocalOrigin implements Origin {
  readonly description: string;
  private readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
    this.description = `dir:${this.root}`;
  }

  async read(path: string): Promise<OriginObject | null> {
    const full = resolve(this.root, path);
    // Defence in depth: tree paths come from the alias maps, but never read outside the root.
    if (!full.startsWith(this.root + sep)) return null;
    try {
      return { body: await readFile(full) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return null;
      throw new OriginError(
        `cannot read ${path} from ${this.description}: ${code ?? (err as Error).message}`,
        'unavailable',
      );
    }
  }
}

/** A tree directory that may be replaced while served (`isoatlas mirror` swaps a new release in):
 * its manifest's identity, checked at most every `checkEveryMs`, names the release, so the handler
 * drops the old alias maps and index once the directory holds another tree. */
export class LocalTreeOrigin implements VersionedOrigin {
  readonly description: string;
  private readonly files: LocalOrigin;
  private cached: { until: number; pinned: PinnedRelease } | null = null;

  constructor(
    private readonly root: string,
    private readonly checkEveryMs = 2_000,
  ) {
    this.files = new LocalOrigin(root);
    this.description = this.files.description;
  }

  async pin(): Promise<PinnedRelease> {
    if (this.cached && this.cached.until > Date.now()) return this.cached.pinned;
    let release: string;
    try {
      const s = await stat(resolve(this.root, treePaths.manifest));
      release = `${s.ino}:${s.mtimeMs}:${s.size}`;
    } catch (err) {
      throw new OriginError(
        `${this.root} has no ${treePaths.manifest}: ${(err as NodeJS.ErrnoException).code}`,
        'unavailable',
      );
    }
    const pinned =
      this.cached?.pinned.release === release
        ? this.cached.pinned
        : { release, files: this.files, publicPath: (path: string) => path };
    this.cached = { until: Date.now() + this.checkEveryMs, pinned };
    return pinned;
  }
}
