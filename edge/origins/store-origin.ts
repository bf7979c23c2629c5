// A published store of releases (edge/contract/store-layout.ts) behind any raw reader (S3, HTTP, a
// directory): the current release from the pointer, any other from the history, each cached for at
// most `ttlMs` (so a publish or rollback reaches every reader within that time), and every file of a
// release read by the sha256 its manifest lists.
import {
  HISTORY_KEY,
  POINTER_KEY,
  objectKey,
  releasePublicPath,
  parseHistory,
  parsePointer,
  type PublishedRelease,
  type ReleaseHistory,
  type ReleasePointer,
} from '../contract/store-layout.js';
import { treePaths } from '../contract/tree.js';
import {
  OriginError,
  type Origin,
  type OriginObject,
  type PinnedRelease,
  type ReleaseFiles,
  type VersionedOrigin,
} from '../origin.js';

/** One release of a store: manifest.json is the object its pointer or history names, every other
 * file the object named by the sha256 the manifest lists for it. */
export class StoreReleaseFiles implements ReleaseFiles {
  readonly description: string;
  constructor(
    private readonly raw: Origin,
    readonly release: string,
    readonly manifestSha256: string,
  ) {
    this.description = `${raw.description} (release ${release})`;
  }
  read(path: string, sha256?: string): Promise<OriginObject | null> {
    if (path === treePaths.manifest) return this.raw.read(objectKey(this.manifestSha256));
    if (!sha256) throw new OriginError(`${path}: a store is read by sha256, and none was given`, 'unavailable');
    return this.raw.read(objectKey(sha256));
  }
}

/** A small JSON object of the store, re-read after `ttlMs`; when re-reading fails, the last good
 * copy is kept for another second rather than failing every request. */
class CachedObject<T> {
  private cached: { value: T; until: number; loadedAt: number } | null = null;
  private loading: Promise<T> | null = null;
  constructor(
    private readonly load: () => Promise<T>,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}
  /** `maxAgeMs`: read it again if the copy is older than this, whatever the TTL. */
  get(maxAgeMs = Infinity): Promise<T> {
    if (this.cached && this.cached.until > this.now() && this.now() - this.cached.loadedAt <= maxAgeMs)
      return Promise.resolve(this.cached.value);
    return (this.loading ??= this.load()
      .then((value) => {
        this.cached = { value, until: this.now() + this.ttlMs, loadedAt: this.now() };
        return value;
      })
      .catch((err) => {
        if (!this.cached) throw err;
        this.cached.until = this.now() + 1_000;
        return this.cached.value;
      })
      .finally(() => (this.loading = null)));
  }
}

export class StoreOrigin implements VersionedOrigin {
  readonly description: string;
  private readonly pointer: CachedObject<ReleasePointer>;
  private readonly history: CachedObject<ReleaseHistory>;
  private readonly pinned = new Map<string, PinnedRelease>();

  constructor(
    private readonly raw: Origin,
    ttlMs = 10_000,
    now: () => number = Date.now,
  ) {
    this.description = `${raw.description} (release from ${POINTER_KEY})`;
    this.pointer = new CachedObject(
      () => this.readJson(POINTER_KEY, parsePointer, 'nothing has been published there'),
      ttlMs,
      now,
    );
    this.history = new CachedObject(() => this.readJson(HISTORY_KEY, parseHistory, 'it lists no releases'), ttlMs, now);
  }

  async pin(release?: string): Promise<PinnedRelease | null> {
    const current = await this.pointer.get();
    if (release === undefined || release === current.release) return this.pinnedOf(current);
    // Retired releases stay readable until they are collected: cached answers may still point there.
    const find = (h: ReleaseHistory) => [...h.releases, ...h.retired].find((r) => r.release === release);
    // A name not in the copy at hand may have been published since: look again (at most once a second).
    const found = find(await this.history.get()) ?? find(await this.history.get(1_000));
    return found ? this.pinnedOf(found) : null;
  }

  /** The releases the store keeps, oldest first, and the current one. */
  async list(): Promise<{ current: string; releases: PublishedRelease[] }> {
    const [current, history] = await Promise.all([this.pointer.get(), this.history.get()]);
    return { current: current.release, releases: history.releases };
  }

  private pinnedOf(r: PublishedRelease): PinnedRelease {
    const key = `${r.release}@${r.manifest_sha256}`;
    let pinned = this.pinned.get(key);
    if (!pinned) {
      pinned = {
        release: r.release,
        files: new StoreReleaseFiles(this.raw, r.release, r.manifest_sha256),
        publicPath: (path) => releasePublicPath(r.release, path),
      };
      this.pinned.set(key, pinned);
      if (this.pinned.size > 16) this.pinned.delete(this.pinned.keys().next().value!);
    }
    return pinned;
  }

  private async readJson<T>(key: string, parse: (text: string) => T, missing: string): Promise<T> {
    const file = await this.raw.read(key);
    if (!file) throw new OriginError(`${this.raw.description} has no ${key}: ${missing}`, 'unavailable');
    try {
      return parse(new TextDecoder().decode(file.body));
    } catch (err) {
      throw new OriginError(`${this.raw.description}${key}: ${(err as Error).message}`, 'unavailable');
    }
  }
}
